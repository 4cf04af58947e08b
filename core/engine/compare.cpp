#include "core/engine/compare.h"

#include <utility>

#include "core/error.h"

namespace hetsgd {
const CompareRun* find_run(const CompareResult& r, Algo algo) {
  for (const CompareRun& run : r.runs) {
    if (run.algo == algo && run.error.empty()) return &run;
  }
  return nullptr;
}

CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const Dataset& train_set, const Dataset& test_set,
                      const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval) {
  return compare(make_devices, make_comm, TrainData{&train_set, &test_set, nullptr}, options,
                 on_eval);
}

CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const TrainData& data, const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval) {
  HETSGD_CHECK(make_devices != nullptr, "compare: no device factory");
  HETSGD_CHECK(!options.algos.empty(), "compare: no algorithm to run");
  HETSGD_CHECK(options.config.num_labels > 0 && options.config.num_features > 0,
               "compare: no model config (CompareOptions::config)");
  // A calibration option that cannot apply would fail every run alike: refused before any.
  options.calibration.validate();
  options.calibration.check_fits(options.config);
  CompareResult out;
  out.target_p1 = options.base.target_p1;
  RunSetup setup;
  setup.config = options.config;
  setup.calibration = options.calibration;
  setup.make_devices = make_devices;
  setup.make_communicator =
      make_comm ? make_comm : [](const std::vector<Device*>&) { return make_host_communicator(); };
  for (Algo algo : options.algos) {
    if (options.stop != nullptr && options.stop->load()) break;
    CompareRun run;
    run.algo = algo;
    setup.options = options.base;
    setup.options.algo = algo;
    if (options.race_to_budget) setup.options.stop_at_target = false;
    try {
      TrainCallbacks cb;
      cb.stop = options.stop;
      cb.indexed_topk = options.indexed_topk;
      if (on_eval) cb.on_eval = [&](const EvalRecord& r) { on_eval(algo, r); };
      RunOutcome outcome = run_pipeline(setup, data, cb);
      run.result = std::move(outcome.result);
      run.calibration = std::move(outcome.calibration);
      if (options.keep_models) run.model = std::move(outcome.model);
    } catch (const std::exception& e) {
      if (!options.keep_going) throw;
      run.error = e.what();
    }
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace hetsgd
