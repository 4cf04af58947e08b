// train() and compare() for Python: the options are parsed by the command line's own option
// tables (apps/cli_common.h, apps/train_flags.h, apps/validation_args.h) from an argv built
// of the keyword arguments, so names, ranges and messages are those of `hetsgd train`. The
// engine runs on a worker thread while the calling thread, GIL released, polls Python's
// signal handlers: Ctrl-C sets the engine's stop flag (the run stops at the next batch
// boundary, merges and returns) and the caller then raises KeyboardInterrupt.
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli_common.h"
#include "apps/python/src/bindings.h"
#include "apps/python/src/model_handle.h"
#include "apps/report.h"
#include "apps/run_setup.h"
#include "apps/validation_args.h"
#include "core/cluster/cluster.h"
#include "core/engine/compare.h"
#include "core/engine/evaluation.h"
#include "core/engine/pipeline.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "kernels/registry.h"
#include "kernels/replicas.h"

namespace hetsgd::python {
namespace {

/// Every option of `hetsgd train` that is not about files: model, devices, training and
/// validation split (the data comes from Python; --train/--test/-o have no meaning here).
struct RunArgs {
  app::ModelArgs model;
  app::DeviceArgs devices;
  TrainOptions opts;
  app::ValArgs val;
  app::CalibrationArgs calibration;
  std::string algos = "adaptive,sync,avg";  ///< compare only
};

RunArgs parse_args(const std::vector<std::string>& argv, bool compare) {
  RunArgs a;
  CLI::App cmd{"", compare ? "hetsgd compare" : "hetsgd train"};
  if (compare) {
    // The defaults of `hetsgd compare`: a common clock for the race.
    a.opts.time_budget_s = 5.0;
    a.opts.max_epochs = 0.0;
  }
  app::add_model_options(&cmd, &a.model);
  app::add_device_options(&cmd, &a.devices, compare ? "auto" : "cpu");
  app::add_train_options(&cmd, &a.opts);
  app::add_validation_options(&cmd, &a.val);
  app::add_calibration_options(&cmd, &a.calibration);
  if (compare) cmd.add_option("--algos", a.algos, "algorithms to run, in order");
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11's order
  try {
    cmd.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  a.opts.validate();
  a.opts.keep_final_state = false;  // the run is not continued from Python
  return a;
}

/// The data of one run, owned here: the training set loses its validation rows when the
/// validation set is split from it, and the test set is widened to the training features.
struct RunData {
  Dataset train, test, val;
  bool has_val = false;
};

RunData prepare_data(const RunArgs& a, const Dataset& train, const Dataset* test,
                     const Dataset* val) {
  RunData d;
  d.train = train;
  std::string description;
  if (val != nullptr) {
    HETSGD_CHECK(val->num_labels == train.num_labels,
                 "val has " << val->num_labels << " labels, the training set " << train.num_labels);
    HETSGD_CHECK(
        val->num_features <= train.num_features,
        "val has " << val->num_features << " features, the training set " << train.num_features);
    d.val = *val;
    d.val.num_features = train.num_features;
    d.has_val = true;
  } else {
    d.val = app::make_validation(a.val, &d.train, &d.has_val, &description);
  }
  // Without a test set the metrics are on the training set, as `hetsgd train` without --test.
  d.test = test != nullptr ? *test : d.train;
  HETSGD_CHECK(d.test.num_labels == train.num_labels, "test has " << d.test.num_labels
                                                                  << " labels, the training set "
                                                                  << train.num_labels);
  HETSGD_CHECK(
      d.test.num_features <= train.num_features,
      "test has " << d.test.num_features << " features, the training set " << train.num_features);
  d.test.num_features = train.num_features;
  return d;
}

/// Runs `work` on a worker thread; the caller's thread (GIL released) checks Python's signals
/// every 50 ms and sets `stop` on KeyboardInterrupt (`*interrupted` then true) or on another
/// exception raised by a signal handler (rethrown after the run has stopped).
template <typename R>
R run_interruptible(const std::function<R()>& work, std::atomic<bool>* stop, bool* interrupted) {
  std::optional<py::error_already_set> pending;
  std::future<R> done;
  {
    py::gil_scoped_release unlocked;
    done = std::async(std::launch::async, work);
    while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      py::gil_scoped_acquire locked;
      if (PyErr_CheckSignals() == 0) continue;
      py::error_already_set e;
      if (e.matches(PyExc_KeyboardInterrupt)) {
        *interrupted = true;
      } else if (!pending) {
        pending.emplace(std::move(e));
      }
      stop->store(true);
    }
  }
  R result = done.get();  // rethrows the engine's exception
  if (pending) throw *pending;
  return result;
}

/// Calls the Python progress callback (GIL taken here: it runs on the engine's thread); a
/// Python exception stops the run and is rethrown by the caller.
struct Progress {
  py::object callback;
  std::atomic<bool>* stop;
  std::exception_ptr error;

  void eval(const std::string& algo, const EvalRecord& e) {
    if (callback.is_none() || error) return;
    const std::string text = app::eval_to_json(e).dump();
    py::gil_scoped_acquire locked;
    try {
      callback(algo, text);
    } catch (py::error_already_set&) {
      error = std::current_exception();
      stop->store(true);
    }
  }
};

py::tuple train_py(const Dataset& train, const Dataset* test, const Dataset* val,
                   const std::vector<std::string>& argv, py::object callback) {
  RunArgs a = parse_args(argv, false);
  // Propensities count the whole training set, rows held out for validation included.
  a.opts.inv_propensity = run_propensities(a.opts, train);
  RunData d = prepare_data(a, train, test, val);
  const app::FrontEndRun run_setup =
      app::make_run_setup(a.model, a.devices, a.opts, a.calibration, d.train, false);
  const RunSetup& setup = run_setup.setup;
  std::atomic<bool> stop{false};
  Progress progress{std::move(callback), &stop, nullptr};
  bool interrupted = false;
  std::function<RunOutcome()> work = [&] {
    TrainCallbacks cb;
    cb.on_eval = [&](const EvalRecord& e) { progress.eval(to_string(a.opts.algo), e); };
    cb.stop = &stop;
    cb.indexed_topk = indexed_topk;
    return run_pipeline(
        setup, TrainData{&d.train, &d.test, d.has_val ? &d.val : nullptr, &world_cluster()}, cb);
  };
  RunOutcome run = run_interruptible(work, &stop, &interrupted);
  if (progress.error) std::rethrow_exception(progress.error);
  nlohmann::json j = app::result_to_json(run.result, d.test.rows());
  j.update(app::calibration_to_json(run.calibration));
  j["devices_arg"] = app::join_ids(run_setup.ids);
  j["communicator"] = run.communicator;
  j["curve"] = nlohmann::json::array();
  for (const EvalRecord& e : run.result.evals) j["curve"].push_back(app::eval_to_json(e));
  auto model = std::make_shared<ModelHandle>(std::move(run.model));
  return py::make_tuple(model, j.dump(), interrupted);
}

py::tuple compare_py(const Dataset& train, const Dataset* test, const Dataset* val,
                     const std::vector<std::string>& argv, py::object callback) {
  RunArgs a = parse_args(argv, true);
  CompareOptions co;
  co.algos = app::parse_algos(a.algos);
  // Propensities count the whole training set, rows held out for validation included.
  a.opts.inv_propensity = run_propensities(a.opts, train);
  RunData d = prepare_data(a, train, test, val);
  // The run train() would make of these options; compare varies only the algorithm.
  const app::FrontEndRun run_setup =
      app::make_run_setup(a.model, a.devices, a.opts, a.calibration, d.train, false);
  co.config = run_setup.setup.config;
  co.base = run_setup.setup.options;
  co.calibration = run_setup.setup.calibration;
  std::atomic<bool> stop{false};
  co.stop = &stop;
  co.indexed_topk = indexed_topk;
  Progress progress{std::move(callback), &stop, nullptr};
  bool interrupted = false;
  std::function<CompareResult()> work = [&] {
    return hetsgd::compare(
        run_setup.setup.make_devices, run_setup.setup.make_communicator,
        TrainData{&d.train, &d.test, d.has_val ? &d.val : nullptr, &world_cluster()}, co,
        [&](Algo algo, const EvalRecord& e) { progress.eval(to_string(algo), e); });
  };
  const CompareResult r = run_interruptible(work, &stop, &interrupted);
  if (progress.error) std::rethrow_exception(progress.error);
  nlohmann::json j;
  j["devices_arg"] = app::join_ids(run_setup.ids);
  j["target_p1"] = r.target_p1;
  j["runs"] = nlohmann::json::array();
  for (const CompareRun& run : r.runs) {
    nlohmann::json rj = nlohmann::json::object();
    if (run.error.empty()) {
      rj = app::result_to_json(run.result, d.test.rows());
      rj.update(app::calibration_to_json(run.calibration));
    }
    rj["algo"] = to_string(run.algo);
    rj["error"] = run.error;
    rj["curve"] = nlohmann::json::array();
    for (const EvalRecord& e : run.result.evals) rj["curve"].push_back(app::eval_to_json(e));
    j["runs"].push_back(rj);
  }
  return py::make_tuple(j.dump(), interrupted);
}

}  // namespace

void bind_train(py::module_& m) {
  m.def("train", &train_py, py::arg("train"), py::arg("test"), py::arg("val"), py::arg("argv"),
        py::arg("callback"),
        "trains with `hetsgd train`'s options (argv); returns (model, result JSON, interrupted)");
  m.def("compare", &compare_py, py::arg("train"), py::arg("test"), py::arg("val"), py::arg("argv"),
        py::arg("callback"),
        "runs `hetsgd compare`'s algorithms; returns (result JSON, interrupted)");
  m.def(
      "parse_train_options",
      [](const std::vector<std::string>& argv, bool compare) { parse_args(argv, compare); },
      py::arg("argv"), py::arg("compare") = false,
      "checks options as `hetsgd train` (or compare) would; raises UsageError");
}

}  // namespace hetsgd::python
