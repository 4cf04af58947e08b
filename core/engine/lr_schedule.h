/// \file core/engine/lr_schedule.h
/// Per-device learning rate (core/engine/README.md §Adaptive SGD): linear warm-up, batch-size
/// scaling, decay.
///
/// With T points consumed so far, N training points and e = floor(T / N):
///   warm-up (T < E_w * N): lr = lr0 * s(b) * (w0 + (1 - w0) * T / (E_w * N))
///   afterwards:            lr = lr0 * s(b) / (1 + lambda * max(0, e - E_w))
/// where s(b) = b / b0 (linear), sqrt(b / b0) (sqrt) or 1 (none), and w0 = warmup_start.
/// Pure functions: safe from any thread.
#pragma once

#include "core/engine/train_options.h"
#include "core/types.h"

namespace hetsgd {

/// s(b): the factor a batch of `batch` points gets relative to one of `b0` points.
/// `scaling` must be resolved (not kAuto).
double batch_lr_scale(LrScaling scaling, index_t batch, index_t b0);

/// True while `samples_seen` (T) is below warmup_epochs * num_points.
bool in_warmup(const TrainOptions& options, index_t samples_seen, index_t num_points);

/// The learning rate of one step on a batch of `batch` points, after `samples_seen` points of
/// a dataset of `num_points` points; `scaling` is the resolved LrScaling.
double learning_rate(const TrainOptions& options, LrScaling scaling, index_t batch,
                     index_t samples_seen, index_t num_points);

}  // namespace hetsgd
