/// \file kernels/cuda/update.cuh
/// Parameter updates on one GPU: the optimiser steps (dense, and lazy on rows of the first
/// layer), and the merge arithmetic of the communicators (weighted sums, the elastic centre
/// update, the pull towards the centre). Twin of kernels/cpu/update.cpp (nvcc-only header).
///
/// Launchers enqueue on `stream` and return without synchronising. Per-element formulas come
/// from core/math/*.h, the code the CPU backend and the host merge run.
#pragma once

#include <cuda_runtime.h>

#include "core/types.h"

namespace hetsgd::cuda::detail {

/// Optimiser hyper-parameters for one update launch.
struct UpdateArgs {
  bool adam = true;
  float lr = 0.0f;
  float momentum = 0.0f;  ///< SGD heavy-ball (0 = plain SGD, velocity untouched)
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;  ///< 0 for biases
  long long step = 1;         ///< Adam step t >= 1 (this update included)
};

/// Dense update of `count` parameters: w, its gradient g, state s1 (SGD velocity / Adam m)
/// and s2 (Adam v; unused for SGD).
void launch_update_dense(float* w, const float* g, float* s1, float* s2, index_t count,
                         const UpdateArgs& args, cudaStream_t stream);

/// Lazy update of the rows `rows[0..*count)` of a width-`h` matrix (`*count` in device memory,
/// at most `capacity`): parameter row rows[r]; gradient row r of `g` when `g_compact`, else
/// row rows[r] of the dense `g`.
void launch_update_rows(float* w, const float* g, bool g_compact, float* s1, float* s2,
                        const col_t* rows, const int* count, index_t capacity, index_t h,
                        const UpdateArgs& args, cudaStream_t stream);

/// acc[i] = (accumulate ? acc[i] : 0) + w * x[i] for `count` elements.
void launch_weighted_sum(float* acc, const float* x, float w, bool accumulate, index_t count,
                         cudaStream_t stream);

/// The elastic centre update of core/engine/README.md §Merge on `n` elements, in double per element
/// as the host merge does (core/math/centre_update.h): z' = z + alpha (avg - z) + mu (z - z_prev),
/// z_prev' = z.
void launch_centre_update(float* z, float* z_prev, const float* avg, index_t n, double alpha,
                          double mu, cudaStream_t stream);

/// w[i] += beta (z[i] - w[i]) in double per element (EASGD-style pull towards the centre).
void launch_pull_towards(float* w, const float* z, index_t n, double beta, cudaStream_t stream);

}  // namespace hetsgd::cuda::detail
