/// \file core/engine/training_job.h
/// A tenant's training job that lives across enforcement rounds (core/tenancy/README.md).
///
/// The job owns its data, model shape, options and TrainState. run_for() trains it for some
/// more seconds on whatever devices it holds this round: the devices are made fresh from the
/// factory, the state restores the centre, the cursor, the batch policy and every device's
/// optimiser (matched by device id, see train()), and the state that comes back is kept for the
/// next round. So a job's learning-rate schedule, shuffle order and Adam moments continue where
/// they stopped; only the device set changes.
///
/// A job with validation rows keeps the best model over every round (keep-best, as `hetsgd
/// train` does), and finish() ends it as `train` ends a run: run_pipeline() from the kept state,
/// so the calibration (forest, tail weight) and the final test metrics are those of the model
/// `train` would save from the same data and options.
///
/// Threads: run_for() may be called concurrently for different jobs; one job's calls are
/// serialised by the caller (the enforcement runner runs each tenant on one thread).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/compare.h"
#include "core/engine/train_options.h"
#include "core/engine/train_state.h"
#include "core/engine/trainer.h"
#include "core/model_config.h"

namespace hetsgd {

/// Makes one replica of `config` per device of `ids` for a run with `options`
/// (kernels/replicas.h: make_replicas, which checks memory first).
using DeviceMaker = std::function<std::vector<std::unique_ptr<Device>>(
    const std::vector<DeviceId>& ids, const ModelConfig& config, const TrainOptions& options)>;

/// What one run_for() call did.
struct JobRound {
  index_t samples = 0;            ///< points trained in this call
  index_t updates = 0;            ///< optimiser steps of this call, over every device
  double train_seconds = 0;       ///< training time of this call
  bool finished = false;          ///< the job reached its own end in (or before) this call
  int devices = 0;                ///< devices it ran on
  std::vector<EvalRecord> evals;  ///< evaluations made in this call (at least the last)
};

/// A training job kept between rounds.
class TrainingJob {
 public:
  /// `options` must have a stopping rule of its own only if the job should finish (max_epochs
  /// or max_rounds: the job is done once reached); the time budget is set per run_for().
  /// `val`: the rows the model is selected and calibrated on (none: the last centre is kept,
  /// and finish() makes only the choices that need no validation rows).
  TrainingJob(Dataset train, Dataset test, ModelConfig config, TrainOptions options,
              Dataset val = {}, CalibrationOptions calibration = {});

  /// Trains for `seconds` more training time (evaluation excluded) on `devices`, made by
  /// `make_device`; `make_comm` null = the host communicator. Returns what the call did; a
  /// finished job returns at once with nothing done and `finished` set, so that whoever lends it
  /// devices can take them back. Throws what train() throws.
  JobRound run_for(double seconds, const std::vector<DeviceId>& devices,
                   const DeviceMaker& make_device, const CommunicatorFactory& make_comm = nullptr);

  /// Ends the job as `hetsgd train` ends a run (run_pipeline() from the job's state, with no
  /// training time left): the selected model, calibrated on the validation rows, its test
  /// metrics, and the model to save, evaluated on one replica made on `device`. Nothing for a
  /// job that never trained. Call after the last run_for(); `callbacks` as run_pipeline's.
  std::optional<RunOutcome> finish(const DeviceId& device, const DeviceMaker& make_device,
                                   const TrainCallbacks& callbacks = {});

  /// When `stop` is set and becomes true, the current run_for() ends at the next batch
  /// boundary (merged, state kept) and the job is not marked finished (e.g. on SIGINT).
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }

  /// True once the job's own epoch or round limit is reached.
  bool finished() const { return finished_; }
  /// The state the next run_for() continues from (empty before the first).
  const TrainState& state() const { return state_; }
  /// Every evaluation so far, over all rounds (the job's P@1 curve).
  const std::vector<EvalRecord>& evals() const { return evals_; }
  /// The model shape and the data.
  const ModelConfig& config() const { return config_; }
  const Dataset& train_set() const { return train_; }
  const Dataset& test_set() const { return test_; }
  const Dataset& val_set() const { return val_; }
  /// The job's options (time budget unset).
  const TrainOptions& options() const { return options_; }

 private:
  /// The sets as train() takes them (no validation set when `val_` has no row).
  TrainData data() const;

  Dataset train_, test_, val_;
  ModelConfig config_;
  TrainOptions options_;
  CalibrationOptions calibration_;
  TrainState state_;
  std::vector<EvalRecord> evals_;
  bool finished_ = false;
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace hetsgd
