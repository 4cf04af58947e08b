/// \file kernels/cuda/dropout.cuh
/// Inverted dropout on one GPU (core/math/dropout.h): the twin of kernels/cpu/dropout.cpp, with
/// the same counter-based mask, so a CUDA and a CPU device at one step drop the same elements
/// (nvcc-only header). Launchers enqueue on `stream` and do not synchronise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace hetsgd::cuda::detail {

/// h[i] = math::dropout_apply(h[i], stream_seed, i, ...) for the `count` = rows x width
/// activations `h` in place, drop probability `p` in (0, 1). 64-bit indices (grid-stride).
void launch_dropout_forward(float* h, index_t count, float p, std::uint64_t stream_seed,
                            cudaStream_t stream);

/// d[i] *= 1 / (1 - p): the backward of dropout on a gradient already masked by the
/// post-dropout activations.
void launch_dropout_backward(float* d, index_t count, float p, cudaStream_t stream);

}  // namespace hetsgd::cuda::detail
