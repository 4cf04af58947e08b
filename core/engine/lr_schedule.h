/// \file core/engine/lr_schedule.h
/// Per-device learning rate (core/engine/README.md §Adaptive SGD): linear warm-up, batch-size
/// scaling, decay.
///
/// With T points consumed so far, N training points, the decay's unit U (decay_unit(): an
/// epoch, or more where labels are rare) and e = floor(T / U):
///   warm-up (T < E_w * N): lr = lr0 * s(b) * (w0 + (1 - w0) * T / (E_w * N))
///   afterwards:            lr = lr0 * s(b) / (1 + lambda * max(0, e - E_w * N / U))
/// where s(b) = b / b0 (linear), sqrt(b / b0) (sqrt) or 1 (none), and w0 = warmup_start.
/// Pure functions: safe from any thread.
#pragma once

#include "core/dataset.h"
#include "core/engine/train_options.h"
#include "core/types.h"

namespace hetsgd {

/// s(b): the factor a batch of `batch` points gets relative to one of `b0` points.
/// `scaling` must be resolved (not kAuto).
double batch_lr_scale(LrScaling scaling, index_t batch, index_t b0);

/// True while `samples_seen` (T) is below warmup_epochs * num_points.
bool in_warmup(const TrainOptions& options, index_t samples_seen, index_t num_points);

/// U, in points: max(N, M, v L N / Y) for `num_points` N rows holding `label_entries` Y label
/// entries of `num_labels` L labels, M = options.decay_min_points and v =
/// options.decay_visits, v L N / Y being the points over which the mean label is seen v times
/// (an epoch shows it Y / L times). max(N, M) where v = 0 or Y = 0.
double decay_unit(const TrainOptions& options, index_t num_points, index_t label_entries,
                  index_t num_labels);

/// decay_unit() of `train` in epochs (1 for an empty set): what the middle range's auto epoch
/// count is counted in (RunRows::pass_epochs).
double pass_epochs(const TrainOptions& options, const Dataset& train);

/// The learning rate of one step on a batch of `batch` points, after `samples_seen` points of
/// a dataset of `num_points` points whose decay unit is `unit` (decay_unit()'s; <= num_points:
/// an epoch); `scaling` is the resolved LrScaling.
double learning_rate(const TrainOptions& options, LrScaling scaling, index_t batch,
                     index_t samples_seen, index_t num_points, double unit);

}  // namespace hetsgd
