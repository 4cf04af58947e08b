// Optimiser updates (core/math/optimizer_update.h), dense and lazy on rows of the first layer,
// and the merge arithmetic (weighted sums, centre update, pull) of the communicators.
#include "kernels/cuda/update.cuh"

#include "core/math/centre_update.h"
#include "core/math/optimizer_update.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/launch.cuh"

namespace hetsgd::cuda::detail {
namespace {

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
  for (index_t i = grid_start(); i < count; i += grid_stride()) {
    update_one(w[i], g[i], s1 + i, s2 + i, a);
  }
}

// Launched for the list's capacity; the real row count is read from device memory, so the
// host never waits for it.
__global__ void update_rows_kernel(float* w, const float* g, bool g_compact, float* s1, float* s2,
                                   const col_t* rows, const int* count, index_t h, KernelArgs a) {
  const index_t total = static_cast<index_t>(*count) * h;
  for (index_t i = grid_start(); i < total; i += grid_stride()) {
    const index_t r = i / h;
    const index_t j = i - r * h;
    const index_t p = static_cast<index_t>(rows[r]) * h + j;
    update_one(w[p], g[g_compact ? i : p], s1 + p, s2 + p, a);
  }
}

__global__ void weighted_sum_kernel(float* acc, const float* x, float w, bool accumulate,
                                    index_t count) {
  for (index_t i = grid_start(); i < count; i += grid_stride()) {
    acc[i] = accumulate ? acc[i] + w * x[i] : w * x[i];
  }
}

__global__ void centre_update_kernel(float* z, float* z_prev, const float* avg, index_t n,
                                     double alpha, double mu) {
  for (index_t i = grid_start(); i < n; i += grid_stride()) {
    math::centre_update(z[i], z_prev[i], avg[i], alpha, mu);
  }
}

__global__ void pull_towards_kernel(float* w, const float* z, index_t n, double beta) {
  for (index_t i = grid_start(); i < n; i += grid_stride()) {
    w[i] = math::pull_towards(w[i], z[i], beta);
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
                        const col_t* rows, const int* count, index_t capacity, index_t h,
                        const UpdateArgs& args, cudaStream_t stream) {
  if (capacity == 0 || h == 0) return;
  update_rows_kernel<<<grid_for(capacity * h), kThreads, 0, stream>>>(
      w, g, g_compact, s1, s2, rows, count, h, to_kernel_args(args));
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_weighted_sum(float* acc, const float* x, float w, bool accumulate, index_t count,
                         cudaStream_t stream) {
  if (count == 0) return;
  weighted_sum_kernel<<<grid_for(count), kThreads, 0, stream>>>(acc, x, w, accumulate, count);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_centre_update(float* z, float* z_prev, const float* avg, index_t n, double alpha,
                          double mu, cudaStream_t stream) {
  if (n == 0) return;
  centre_update_kernel<<<grid_for(n), kThreads, 0, stream>>>(z, z_prev, avg, n, alpha, mu);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_pull_towards(float* w, const float* z, index_t n, double beta, cudaStream_t stream) {
  if (n == 0) return;
  pull_towards_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, z, n, beta);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
