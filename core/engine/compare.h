/// \file core/engine/compare.h
/// Side-by-side runs of several algorithms on the same data and devices (core/engine/README.md
/// §Compare): adaptive vs synchronous SGD vs static averaging (vs EASGD), same model, same options,
/// same time budget or target P@1. Each run is one run_pipeline() (core/engine/pipeline.h), the
/// training and the calibration `hetsgd train` does, so a compared run's metrics are those of
/// the model `train` would save. compare() only runs and returns: the table, the curve files
/// and the plot are the command line's (apps/compare_report.h, apps/plot_launcher.h).
///
/// core/ cannot make devices, so the caller passes a factory that returns a fresh set (same
/// ids, same initial parameters) for every run; each run is independent of the previous ones.
/// Runs happen one after another on the calling thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/calibrate.h"
#include "core/engine/pipeline.h"
#include "core/engine/train_options.h"
#include "core/engine/trainer.h"
#include "core/model/model_io.h"
#include "core/model_config.h"

namespace hetsgd {

/// Makes a fresh set of devices (replicas initialised from the model's seed) for one run.
using DeviceFactory = std::function<std::vector<std::unique_ptr<Device>>()>;
/// Makes the Communicator for one run's devices; null = make_host_communicator().
using CommunicatorFactory =
    std::function<std::unique_ptr<Communicator>(const std::vector<Device*>& devices)>;

/// What to compare and where the results go.
struct CompareOptions {
  std::vector<Algo> algos = {Algo::kAdaptive, Algo::kSync, Algo::kAvg};  ///< run in this order
  ModelConfig config;  ///< the model of every run (the factory's replicas are of it)
  TrainOptions base;   ///< options of every run; `algo` is set per run
  /// The choices after each run's training, as `hetsgd train` makes them (RunSetup).
  CalibrationOptions calibration;
  /// When set and true, the running algorithm stops at its next batch boundary (its result is
  /// kept, StopReason::kInterrupted) and no further algorithm starts (e.g. on SIGINT).
  const std::atomic<bool>* stop = nullptr;
  /// Each run's TrainCallbacks::indexed_topk (its final evaluation through label clusters).
  IndexedTopk indexed_topk;
  bool keep_going = true;  ///< a failed run is recorded and the next one starts
  /// Every run continues to the common budget (time, epochs or rounds) after reaching
  /// base.target_p1 (TrainOptions::stop_at_target = false): the time to target is still
  /// recorded, and the final metrics of all runs then compare at equal training time. False:
  /// base.stop_at_target decides (true = each run stops at its target).
  bool race_to_budget = true;
  /// Each run keeps its calibrated model (CompareRun::model); false: only its parameters'
  /// metrics stay, and one model at a time is in memory.
  bool keep_models = false;
};

/// One algorithm's run.
struct CompareRun {
  Algo algo = Algo::kAdaptive;  ///< algorithm
  /// Its result (empty when it failed): the metrics of the calibrated model; `model` moved out.
  TrainResult result;
  Calibration calibration;  ///< the choices made after its training
  SavedModel model;         ///< the calibrated model (empty unless CompareOptions::keep_models)
  std::string error;        ///< what() of the exception that ended it ("" = ran fine)
};

/// Every run.
struct CompareResult {
  std::vector<CompareRun> runs;  ///< in CompareOptions::algos order
  double target_p1 = 0.0;        ///< the target used for "time to target"
};

/// Runs every algorithm of `options.algos` through run_pipeline() on fresh devices from
/// `make_devices` and returns the runs. `on_eval` (optional) sees every evaluation as it
/// happens. Throws the run's exception when a run fails and keep_going is false; a bad
/// calibration option (CalibrationOptions::validate(), check_fits()) throws before any run.
CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const Dataset& train_set, const Dataset& test_set,
                      const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval = {});

/// Same, with a validation set: every run selects its keep-best model on `data.val` and
/// reports the test metrics of that model (TrainData).
CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const TrainData& data, const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval = {});

/// The successful run of `algo` in `result`, or null.
const CompareRun* find_run(const CompareResult& result, Algo algo);

}  // namespace hetsgd
