/// \file core/engine/run_plan.h
/// The run's plan: how many points a round holds (S) and how often the centre is evaluated
/// (R), resolved from the options, the devices and the data.
#pragma once

#include "core/engine/train_options.h"
#include "core/types.h"

namespace hetsgd {

/// Global batches (K * b0 points) a round holds at least when round_samples = 0 (auto).
inline constexpr index_t kMinBatchesPerRound = 8;

/// The S a run of `options` uses on `num_devices` devices and `num_points` training points
/// (resolves round_samples = 0: max(N / 16, kMinBatchesPerRound * K * b0), capped at N).
index_t resolve_round_samples(const TrainOptions& options, int num_devices, index_t num_points);
/// The evaluation period R in rounds (resolves eval_every_rounds = 0).
int resolve_eval_every(const TrainOptions& options, index_t round_samples, index_t num_points);

}  // namespace hetsgd
