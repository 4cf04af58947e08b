/// \file kernels/cuda/launch.cuh
/// Launch geometry shared by the element-wise and row-wise kernels (nvcc-only header).
///
/// Kernels use grid-stride loops with 64-bit indices, so the grid is capped and a huge matrix
/// (a logits block may exceed 2^31 elements) reuses blocks instead of overflowing gridDim.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "core/types.h"

namespace hetsgd::cuda::detail {

/// Threads per block of the grid-stride kernels.
constexpr int kThreads = 256;

/// Largest grid a grid-stride launch uses: 8 waves of 65,535 blocks, far past what any current
/// GPU keeps resident, so the cap never costs occupancy.
constexpr index_t kMaxBlocks = 65535 * 8;

/// Blocks for `count` independent items at kThreads per block, at least 1, at most kMaxBlocks.
inline unsigned grid_for(index_t count) {
  const index_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<index_t>(std::max<index_t>(blocks, 1), kMaxBlocks));
}

/// First index and stride of a grid-stride loop over 64-bit indices.
__device__ inline index_t grid_start() {
  return blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
}
__device__ inline index_t grid_stride() { return static_cast<index_t>(gridDim.x) * blockDim.x; }

}  // namespace hetsgd::cuda::detail
