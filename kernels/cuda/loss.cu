// Fused output-layer losses: softmax cross-entropy and sigmoid BCE, one block per row, over a
// whole logits matrix or streamed over label chunks.
#include "kernels/cuda/loss.cuh"

#include <cub/block/block_reduce.cuh>

#include "core/math/label_smoothing.h"
#include "core/math/sigmoid_bce.h"
#include "core/math/softmax_ce.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/softmax_grad.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kLossThreads = 256;
using BlockReduce = cub::BlockReduce<float, kLossThreads>;

// Max of the row's n logits, returned to every thread of the block through the kernel's shared
// `s_max`.
__device__ float block_row_max(const float* zr, index_t n, BlockReduce::TempStorage& tmp,
                               float& s_max) {
  float m = -INFINITY;
  for (index_t j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, zr[j]);
  return block_max<BlockReduce>(tmp, s_max, m);
}

// Row r of z: max and sum of shifted exponentials by block reductions (the same formulas as
// core/math's serial row_max / row_sum_exp, summed in a different order), then the per-element
// gradient formula of core/math. The label term of the loss is read by thread 0 before the
// gradient pass overwrites z (z and the gradient alias).
__global__ void softmax_ce_kernel(float* z, index_t n, const int* y_indptr, const col_t* y_idx,
                                  float scale, bool with_grad, float* row_loss, float smoothing) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_max, s_sum, s_zsum;
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
  const float m = block_row_max(zr, n, tmp, s_max);
  if (smoothing > 0.0f) {  // sum of the logits for the smoothing term, before any overwrite
    float zs = 0.0f;
    for (index_t j = threadIdx.x; j < n; j += blockDim.x) zs += zr[j];
    zs = BlockReduce(tmp).Sum(zs);
    if (threadIdx.x == 0) s_zsum = zs;
    __syncthreads();
  }
  float s = 0.0f;
  for (index_t j = threadIdx.x; j < n; j += blockDim.x) s += expf(zr[j] - m);
  s = BlockReduce(tmp).Sum(s);
  if (threadIdx.x == 0) {
    s_sum = s;
    float l = math::softmax_ce_loss(m, s, zr, y_idx + y0, ny);
    if (smoothing > 0.0f) {
      double label_sum = 0.0;
      for (int i = 0; i < ny; ++i) label_sum += zr[y_idx[y0 + i]];
      l += math::smoothing_loss_term(smoothing, s_zsum, n, label_sum, ny);
    }
    row_loss[r] = l;
  }
  __syncthreads();
  if (!with_grad) return;
  write_softmax_grad(zr, nullptr, n, 0, n, m, s_sum, scale, smoothing, y_idx + y0, ny);
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

// One chunk of one row: block reductions of the chunk's max and shifted-exponential sum, then
// thread 0 folds them into the running state, rescaling the old sum to the new max (the
// streaming log-sum-exp), and adds the row's labels that fall in the chunk.
__global__ void score_chunk_kernel(const float* z, index_t n, index_t c0, const int* y_indptr,
                                   const col_t* y_idx, bool softmax, bool first,
                                   ScoreState* state) {
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float s_max;
  const index_t r = blockIdx.x;
  const float* zr = z + r * n;
  const int y0 = y_indptr[r];
  const int ny = y_indptr[r + 1] - y0;
  ScoreState st = first ? ScoreState{-INFINITY, 0.0f, 0.0, 0.0} : state[r];
  if (softmax) {
    const float m = block_row_max(zr, n, tmp, s_max);
    float s = 0.0f;
    for (index_t j = threadIdx.x; j < n; j += blockDim.x) s += expf(zr[j] - m);
    s = BlockReduce(tmp).Sum(s);
    if (threadIdx.x != 0) return;
    const float next = fmaxf(st.max, m);
    st.sum_exp = (st.sum_exp == 0.0f ? 0.0f : st.sum_exp * expf(st.max - next)) +
                 (s == 0.0f ? 0.0f : s * expf(m - next));
    st.max = next;
    for (int i = 0; i < ny; ++i) {
      const index_t y = y_idx[y0 + i];
      if (y >= c0 && y < c0 + n) st.label_sum += zr[y - c0];
    }
  } else {
    float s = 0.0f;
    for (index_t j = threadIdx.x; j < n; j += blockDim.x) s += math::bce_loss(zr[j], 0.0f);
    s = BlockReduce(tmp).Sum(s);
    if (threadIdx.x != 0) return;
    st.elem_sum += s;
    for (int i = 0; i < ny; ++i) {
      const index_t y = y_idx[y0 + i];
      if (y >= c0 && y < c0 + n) {
        const float x = zr[y - c0];
        st.label_sum += math::bce_loss(x, 1.0f) - math::bce_loss(x, 0.0f);
      }
    }
  }
  state[r] = st;
}

__global__ void score_finish_kernel(const ScoreState* state, index_t rows, index_t num_labels,
                                    const int* y_indptr, bool softmax, float* row_loss) {
  for (index_t r = grid_start(); r < rows; r += grid_stride()) {
    const ScoreState st = state[r];
    const int ny = y_indptr[r + 1] - y_indptr[r];
    if (softmax) {
      // log(sum_exp) - mean(z_y - m), the form of math::softmax_ce_loss (no cancellation of a
      // large log-sum-exp against a large label logit).
      row_loss[r] = ny == 0 ? 0.0f
                            : static_cast<float>(logf(st.sum_exp) -
                                                 (st.label_sum / ny - static_cast<double>(st.max)));
    } else {
      row_loss[r] =
          static_cast<float>((st.elem_sum + st.label_sum) / static_cast<double>(num_labels));
    }
  }
}

}  // namespace

void launch_softmax_ce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                       float scale, bool with_grad, float* row_loss, cudaStream_t stream,
                       float smoothing) {
  if (rows == 0) return;
  softmax_ce_kernel<<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(
      z, n, y_indptr, y_idx, scale, with_grad, row_loss, smoothing);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_bce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                float scale, bool with_grad, float* row_loss, cudaStream_t stream) {
  if (rows == 0) return;
  bce_kernel<<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(z, n, y_indptr, y_idx, scale,
                                                                       with_grad, row_loss);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_score_chunk(const float* z, index_t rows, index_t n, index_t c0, const int* y_indptr,
                        const col_t* y_idx, Loss loss, bool first, ScoreState* state,
                        cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  score_chunk_kernel<<<static_cast<unsigned>(rows), kLossThreads, 0, stream>>>(
      z, n, c0, y_indptr, y_idx, loss == Loss::kSoftmax, first, state);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_score_finish(const ScoreState* state, index_t rows, index_t num_labels,
                         const int* y_indptr, Loss loss, float* row_loss, cudaStream_t stream) {
  if (rows == 0) return;
  score_finish_kernel<<<grid_for(rows), kThreads, 0, stream>>>(state, rows, num_labels, y_indptr,
                                                               loss == Loss::kSoftmax, row_loss);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
