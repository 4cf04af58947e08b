/// \file kernels/cuda/block_reduce.cuh
/// Block-wide max shared by the row-wise loss kernels (nvcc-only header).
#pragma once

#include <cub/block/block_reduce.cuh>

namespace hetsgd::cuda::detail {

/// Max of two floats for cub reductions. `a > b ? a : b`, not fmaxf, is the kernels' existing
/// NaN behaviour (a NaN in b wins, one in a loses), kept so the reduction's result is unchanged.
struct MaxOp {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

/// The max of `v` over the block, returned to every thread through the shared `slot` (cub gives
/// the result to thread 0 only). The __syncthreads() that publishes `slot` also ends this use of
/// `tmp`, so the caller may run its next reduction on the same storage.
template <typename Reduce>
__device__ inline float block_max(typename Reduce::TempStorage& tmp, float& slot, float v) {
  v = Reduce(tmp).Reduce(v, MaxOp());
  if (threadIdx.x == 0) slot = v;
  __syncthreads();
  return slot;
}

}  // namespace hetsgd::cuda::detail
