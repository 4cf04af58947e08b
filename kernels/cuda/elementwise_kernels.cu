// Bias + ReLU, ReLU backward and weighted sums: memory-bound elementwise kernels.
#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kThreads = 256;

// Grid-stride loops with 64-bit indices; the grid is capped so huge matrices reuse blocks.
unsigned grid_for(index_t count) {
  const index_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<index_t>(std::max<index_t>(blocks, 1), 65535 * 8));
}

__global__ void add_bias_kernel(float* z, const float* b, index_t count, index_t n, bool relu) {
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const float v = z[i] + b[i % n];
    z[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void relu_backward_kernel(float* d, const float* act, index_t count) {
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    if (!(act[i] > 0.0f)) d[i] = 0.0f;
  }
}

__global__ void weighted_sum_kernel(float* acc, const float* x, float w, bool accumulate,
                                    index_t count) {
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    acc[i] = accumulate ? acc[i] + w * x[i] : w * x[i];
  }
}

}  // namespace

void launch_add_bias(float* z, const float* b, index_t rows, index_t n, bool relu,
                     cudaStream_t stream) {
  const index_t count = rows * n;
  if (count == 0) return;
  add_bias_kernel<<<grid_for(count), kThreads, 0, stream>>>(z, b, count, n, relu);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_relu_backward(float* d, const float* act, index_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_backward_kernel<<<grid_for(count), kThreads, 0, stream>>>(d, act, count);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_weighted_sum(float* acc, const float* x, float w, bool accumulate, index_t count,
                         cudaStream_t stream) {
  if (count == 0) return;
  weighted_sum_kernel<<<grid_for(count), kThreads, 0, stream>>>(acc, x, w, accumulate, count);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
