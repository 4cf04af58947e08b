// Fused output-layer losses: softmax cross-entropy and sigmoid BCE, one block per row.
#include <cub/block/block_reduce.cuh>

#include "core/math/sigmoid_bce.h"
#include "core/math/softmax_ce.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kLossThreads = 256;
using BlockReduce = cub::BlockReduce<float, kLossThreads>;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

// Row r of z: max and sum of shifted exponentials by block reductions (the same formulas as
// core/math's serial row_max / row_sum_exp, summed in a different order), then the per-element
// gradient formula of core/math. The label term of the loss is read by thread 0 before the
// gradient pass overwrites z (z and the gradient alias).
__global__ void softmax_ce_kernel(float* z, index_t n, const int* y_indptr, const col_t* y_idx,
                                  float scale, bool with_grad, float* row_loss) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_max, s_sum;
  const index_t r = blockIdx.x;
  float* zr = z + r * n;
  const int y0 = y_indptr[r];
  const int ny = y_indptr[r + 1] - y0;
  if (ny == 0) {  // no target: loss 0, gradient 0 (core/math convention)
    if (threadIdx.x == 0) row_loss[r] = 0.0f;
    if (with_grad) {
      for (index_t j = threadIdx.x; j < n; j += blockDim.x) zr[j] = 0.0f;
    }
    return;
  }
  float m = -INFINITY;
  for (index_t j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, zr[j]);
  m = BlockReduce(tmp).Reduce(m, MaxOp());
  if (threadIdx.x == 0) s_max = m;
  __syncthreads();
  m = s_max;
  float s = 0.0f;
  for (index_t j = threadIdx.x; j < n; j += blockDim.x) s += expf(zr[j] - m);
  s = BlockReduce(tmp).Sum(s);
  if (threadIdx.x == 0) {
    s_sum = s;
    row_loss[r] = math::softmax_ce_loss(m, s, zr, y_idx + y0, ny);
  }
  __syncthreads();
  if (!with_grad) return;
  const float inv = scale / s_sum;
  for (index_t j = threadIdx.x; j < n; j += blockDim.x) {
    zr[j] = math::softmax_ce_grad(zr[j], m, inv, 0.0f);
  }
  __syncthreads();
  // Serial on purpose: duplicate label ids must accumulate like the loss counts them.
  if (threadIdx.x == 0) {
    const float t = scale / static_cast<float>(ny);
    for (int i = 0; i < ny; ++i) zr[y_idx[y0 + i]] -= t;
  }
}

// BCE: every element first as a negative (y = 0); the few labelled elements are corrected by
// thread 0, reading their logits before the overwrite: loss += bce(x,1) - bce(x,0) and
// grad -= scale (bce_grad(x,1) = bce_grad(x,0) - 1).
__global__ void bce_kernel(float* z, index_t n, const int* y_indptr, const col_t* y_idx,
                           float scale, bool with_grad, float* row_loss) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_label_term;
  const index_t r = blockIdx.x;
  float* zr = z + r * n;
  const int y0 = y_indptr[r];
  const int ny = y_indptr[r + 1] - y0;
  if (threadIdx.x == 0) {
    float c = 0.0f;
    for (int i = 0; i < ny; ++i) {
      const float x = zr[y_idx[y0 + i]];
      c += math::bce_loss(x, 1.0f) - math::bce_loss(x, 0.0f);
    }
    s_label_term = c;
  }
  __syncthreads();
  float s = 0.0f;
  for (index_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float x = zr[j];
    s += math::bce_loss(x, 0.0f);
    if (with_grad) zr[j] = scale * math::bce_grad(x, 0.0f);
  }
  s = BlockReduce(tmp).Sum(s);
  __syncthreads();
  if (threadIdx.x == 0) {
    row_loss[r] = (s + s_label_term) / static_cast<float>(n);
    if (with_grad) {
      for (int i = 0; i < ny; ++i) zr[y_idx[y0 + i]] -= scale;
    }
  }
}

}  // namespace

void launch_softmax_ce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                       float scale, bool with_grad, float* row_loss, cudaStream_t stream) {
  if (rows == 0) return;
  softmax_ce_kernel<<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(
      z, n, y_indptr, y_idx, scale, with_grad, row_loss);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_bce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                float scale, bool with_grad, float* row_loss, cudaStream_t stream) {
  if (rows == 0) return;
  bce_kernel<<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(z, n, y_indptr, y_idx, scale,
                                                                       with_grad, row_loss);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
