// Optimiser updates (core/math/optimizer_update.h): dense, and lazy on rows of the first layer.
#include <algorithm>

#include "core/math/optimizer_update.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(index_t count) {
  const index_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<index_t>(std::max<index_t>(blocks, 1), 65535 * 8));
}

// The per-step constants (Adam bias corrections) are computed once on the host, in double,
// exactly as the CPU backend does, and passed by value.
struct KernelArgs {
  bool adam;
  float lr, momentum, beta1, beta2, eps, wd;
  math::AdamStep step;
};

__device__ inline void update_one(float& w, float g, float* s1, float* s2, const KernelArgs& a) {
  if (a.adam) {
    math::adam_update(w, *s1, *s2, g, a.step, a.beta1, a.beta2, a.eps, a.wd);
  } else if (a.momentum != 0.0f) {
    math::momentum_update(w, *s1, g, a.lr, a.momentum, a.wd);
  } else {
    math::sgd_update(w, g, a.lr, a.wd);
  }
}

__global__ void update_dense_kernel(float* w, const float* g, float* s1, float* s2, index_t count,
                                    KernelArgs a) {
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    update_one(w[i], g[i], s1 + i, s2 + i, a);
  }
}

__global__ void update_rows_kernel(float* w, const float* g, bool g_compact, float* s1, float* s2,
                                   const col_t* rows, index_t count, index_t h, KernelArgs a) {
  const index_t total = count * h;
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t r = i / h;
    const index_t j = i - r * h;
    const index_t p = static_cast<index_t>(rows[r]) * h + j;
    update_one(w[p], g[g_compact ? i : p], s1 + p, s2 + p, a);
  }
}

KernelArgs to_kernel_args(const UpdateArgs& u) {
  KernelArgs a{};
  a.adam = u.adam;
  a.lr = u.lr;
  a.momentum = u.momentum;
  a.beta1 = u.beta1;
  a.beta2 = u.beta2;
  a.eps = u.eps;
  a.wd = u.weight_decay;
  a.step = math::adam_step(u.lr, u.beta1, u.beta2, u.step);
  return a;
}

}  // namespace

void launch_update_dense(float* w, const float* g, float* s1, float* s2, index_t count,
                         const UpdateArgs& args, cudaStream_t stream) {
  if (count == 0) return;
  update_dense_kernel<<<grid_for(count), kThreads, 0, stream>>>(w, g, s1, s2, count,
                                                                to_kernel_args(args));
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_update_rows(float* w, const float* g, bool g_compact, float* s1, float* s2,
                        const col_t* rows, index_t count, index_t h, const UpdateArgs& args,
                        cudaStream_t stream) {
  if (count == 0 || h == 0) return;
  update_rows_kernel<<<grid_for(count * h), kThreads, 0, stream>>>(w, g, g_compact, s1, s2, rows,
                                                                   count, h, to_kernel_args(args));
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
