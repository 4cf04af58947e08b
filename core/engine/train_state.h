/// \file core/engine/train_state.h
/// The whole resumable state of a training run, as a plain value (core/engine/README.md).
///
/// train() takes a TrainState in and hands the final one back (TrainResult::state). An empty
/// state (no centre) means a fresh start from the devices' initial parameters. A checkpoint
/// file is this value serialised (core/engine/checkpoint.h); a tenant's job between
/// enforcement rounds is the same value kept in memory (core/engine/training_job.h).
///
/// Per-device state lives in slots keyed by the device's text id (`cpu:0`, `cuda:1@0.5`): a
/// run on another device set takes the slots whose ids match and starts the others fresh, so a
/// job that moves between devices keeps what it learnt about each of them.
#pragma once

#include <string>
#include <vector>

#include "core/device.h"
#include "core/engine/batch_source.h"
#include "core/metrics.h"
#include "core/types.h"

namespace hetsgd {

/// What the engine keeps about one device slot between runs.
struct SlotState {
  std::string device;        ///< DeviceId::str() of the slot's device
  int rank = 0;              ///< the node (MPI rank) the device belongs to
  bool alive = true;         ///< false once the device failed (it is not used again)
  std::string failure;       ///< what() of the exception that removed it
  index_t batch_size = 0;    ///< b_i at save time (adaptive)
  double throughput = 0.0;   ///< EMA r_i, points per busy second (0 = not measured)
  index_t updates = 0;       ///< total optimiser steps
  index_t samples = 0;       ///< total points trained
  OptimizerState optimizer;  ///< the replica's optimiser (Adam moments, step count)
  /// The replica's parameters when they differ from the centre (EASGD, beta < 1); empty when
  /// the replica restarts from the centre at every merge.
  std::vector<float> replica;
};

/// Everything needed to continue a run exactly where it stopped.
struct TrainState {
  std::string options_text;  ///< TrainOptions::trajectory_text() of the run
  index_t param_count = 0;   ///< layout().total() of the model
  /// The model's layer widths and optimiser (core/engine/checkpoint.h: model_shape_text; a
  /// resume must match both; empty in states that do not say).
  std::string model_shape;
  std::string optimizer;
  std::vector<float> centre;           ///< Z (param_count floats; empty = fresh start)
  std::vector<float> previous_centre;  ///< Z_prev for momentum (param_count floats; none = Z)
  BatchSourceState cursor;             ///< shared cursor: seed, epoch, position, permutation
  bool past_warmup = false;            ///< the batch policy had started
  /// Per device slot, in the run's device order; a checkpoint across nodes holds every
  /// node's, by rank (each node restores its own).
  std::vector<SlotState> slots;
  index_t round = 0;               ///< rounds completed
  double train_seconds = 0.0;      ///< training wall time so far (evaluation excluded)
  double eval_seconds = 0.0;       ///< evaluation wall time so far
  index_t evaluations = 0;         ///< evaluations done so far
  double best_p1 = 0.0;            ///< best P@1 seen so far
  double time_to_target_s = -1.0;  ///< training time at which the target was reached (-1)
  bool target_reached = false;     ///< an evaluation reached TrainOptions::target_p1
  double loss_since_eval = 0.0;    ///< sum of batch losses x rows since the last evaluation
  index_t points_since_eval = 0;   ///< points trained since the last evaluation
  // ---- model selection on validation data (core/engine/selection.h) ----
  bool has_best = false;           ///< an evaluation on validation data was made
  RankingMetrics best_val;         ///< validation metrics of the best evaluation
  RankingMetrics best_test;        ///< test metrics of that same model (reported, not used)
  index_t best_round = 0;          ///< round of the best evaluation
  index_t evals_since_best = 0;    ///< evaluations since the best one (patience)
  std::vector<float> best_centre;  ///< the best centre (keep-best; empty when off or none)
  std::vector<float> average;      ///< the centre's moving average (TrainOptions::ema; or empty)

  /// True for a fresh start (nothing trained yet).
  bool empty() const { return centre.empty(); }
};

}  // namespace hetsgd
