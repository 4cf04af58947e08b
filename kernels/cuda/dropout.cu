// Inverted dropout: element-wise, grid-stride, the mask bit of element i from core/math.
#include "kernels/cuda/dropout.cuh"

#include "core/math/dropout.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/launch.cuh"

namespace hetsgd::cuda::detail {
namespace {

__global__ void dropout_forward_kernel(float* h, index_t count, std::uint64_t seed,
                                       std::uint32_t threshold, float keep_scale) {
  for (index_t i = grid_start(); i < count; i += grid_stride()) {
    h[i] = math::dropout_apply(h[i], seed, static_cast<std::uint64_t>(i), threshold, keep_scale);
  }
}

__global__ void scale_kernel(float* d, index_t count, float s) {
  for (index_t i = grid_start(); i < count; i += grid_stride()) d[i] *= s;
}

}  // namespace

void launch_dropout_forward(float* h, index_t count, float p, std::uint64_t stream_seed,
                            cudaStream_t stream) {
  if (count == 0) return;
  dropout_forward_kernel<<<grid_for(count), kThreads, 0, stream>>>(
      h, count, stream_seed, math::dropout_threshold(p), 1.0f / (1.0f - p));
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_dropout_backward(float* d, index_t count, float p, cudaStream_t stream) {
  if (count == 0) return;
  scale_kernel<<<grid_for(count), kThreads, 0, stream>>>(d, count, 1.0f / (1.0f - p));
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
