// Softmax cross-entropy over long rows at small batches: each row is split into segments, one
// block per (segment, row), so a batch of 128 rows of 670,091 labels keeps thousands of
// blocks streaming from memory instead of 128. The output layer's bias is added on the fly
// (the logits are read twice and written once, with no separate bias pass).
#include <algorithm>

#include <cub/block/block_reduce.cuh>

#include "core/error.h"
#include "core/math/label_smoothing.h"
#include "core/math/softmax_ce.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/softmax_grad.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kThreadsPerSegment = 256;
using SegReduce = cub::BlockReduce<float, kThreadsPerSegment>;

// Pass 1, nothing written to z: the segment's max, its sum of exp(v - max) and its sum of v
// (label smoothing), and for segment 0 the row's sum of label logits, read before pass 2 can
// overwrite them.
__global__ void softmax_partials_kernel(const float* z, const float* bias, index_t n,
                                        index_t seg_len, const int* y_indptr, const col_t* y_idx,
                                        bool smoothing, SoftmaxPartial* partials,
                                        double* label_sum) {
  __shared__ typename SegReduce::TempStorage tmp;
  __shared__ float s_max;
  const index_t r = blockIdx.y;
  const index_t seg = blockIdx.x;
  const float* zr = z + r * n;
  const index_t j0 = seg * seg_len;
  const index_t j1 = min(n, j0 + seg_len);
  float m = -INFINITY;
  for (index_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) m = fmaxf(m, logit(zr, bias, j));
  m = block_max<SegReduce>(tmp, s_max, m);
  float s = 0.0f, zs = 0.0f;
  for (index_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
    const float v = logit(zr, bias, j);
    s += expf(v - m);
    zs += v;
  }
  s = SegReduce(tmp).Sum(s);
  __syncthreads();
  if (smoothing) zs = SegReduce(tmp).Sum(zs);
  if (threadIdx.x != 0) return;
  partials[r * gridDim.x + seg] = SoftmaxPartial{m, s, zs};
  if (seg == 0) {
    const int y0 = y_indptr[r], ny = y_indptr[r + 1] - y0;
    double ls = 0.0;
    for (int i = 0; i < ny; ++i) ls += logit(zr, bias, y_idx[y0 + i]);
    label_sum[r] = ls;
  }
}

// Pass 2: every block folds its row's partials (a streaming log-sum-exp), segment 0 writes the
// loss, and each block writes the gradient of its segment, then subtracts the targets of the
// labels inside it (serially, so duplicate label ids accumulate as the loss counts them).
__global__ void softmax_grad_kernel(float* z, const float* bias, index_t n, index_t seg_len,
                                    const int* y_indptr, const col_t* y_idx, float scale,
                                    bool with_grad, float smoothing, const SoftmaxPartial* partials,
                                    const double* label_sum, float* row_loss) {
  __shared__ float s_max, s_sum;
  const index_t r = blockIdx.y;
  const index_t seg = blockIdx.x;
  float* zr = z + r * n;
  const int y0 = y_indptr[r], ny = y_indptr[r + 1] - y0;
  const index_t j0 = seg * seg_len;
  const index_t j1 = min(n, j0 + seg_len);
  if (ny == 0) {  // no target: loss 0, gradient 0 (core/math convention)
    if (seg == 0 && threadIdx.x == 0) row_loss[r] = 0.0f;
    if (with_grad) {
      for (index_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) zr[j] = 0.0f;
    }
    return;
  }
  if (threadIdx.x == 0) {
    const SoftmaxPartial* p = partials + r * gridDim.x;
    float m = -INFINITY;
    for (unsigned i = 0; i < gridDim.x; ++i) m = fmaxf(m, p[i].max);
    float s = 0.0f, zs = 0.0f;
    for (unsigned i = 0; i < gridDim.x; ++i) {
      if (p[i].sum_exp > 0.0f) s += p[i].sum_exp * expf(p[i].max - m);
      zs += p[i].sum;
    }
    s_max = m;
    s_sum = s;
    if (seg == 0) {
      // math::softmax_ce_loss: log(sum_exp) - mean(z_y - m), plus the smoothing term.
      float l = logf(s) - static_cast<float>(label_sum[r] / ny - static_cast<double>(m));
      if (smoothing > 0.0f) l += math::smoothing_loss_term(smoothing, zs, n, label_sum[r], ny);
      row_loss[r] = l;
    }
  }
  __syncthreads();
  if (!with_grad) return;
  write_softmax_grad(zr, bias, n, j0, j1, s_max, s_sum, scale, smoothing, y_idx + y0, ny);
}

}  // namespace

index_t softmax_segments(index_t n) {
  const index_t segs = (n + kSoftmaxSegmentMin - 1) / kSoftmaxSegmentMin;
  return std::max<index_t>(1, std::min<index_t>(segs, kSoftmaxMaxSegments));
}

void launch_softmax_ce_rows(float* z, const float* bias, index_t rows, index_t n,
                            const int* y_indptr, const col_t* y_idx, float scale, bool with_grad,
                            float* row_loss, SoftmaxScratch& scratch, cudaStream_t stream,
                            float smoothing) {
  if (rows == 0 || n == 0) return;
  HETSGD_CHECK(rows <= 65535, "softmax: " << rows << " rows in one launch (at most 65535)");
  const index_t segs = softmax_segments(n);
  const index_t seg_len = (n + segs - 1) / segs;
  scratch.partials.reserve(static_cast<size_t>(rows * segs), stream);
  scratch.label_sum.reserve(static_cast<size_t>(rows), stream);
  const dim3 grid(static_cast<unsigned>(segs), static_cast<unsigned>(rows));
  softmax_partials_kernel<<<grid, kThreadsPerSegment, 0, stream>>>(
      z, bias, n, seg_len, y_indptr, y_idx, smoothing > 0.0f, scratch.partials.data(),
      scratch.label_sum.data());
  HETSGD_CUDA_CHECK_LAUNCH(stream);
  softmax_grad_kernel<<<grid, kThreadsPerSegment, 0, stream>>>(
      z, bias, n, seg_len, y_indptr, y_idx, scale, with_grad, smoothing, scratch.partials.data(),
      scratch.label_sum.data(), row_loss);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace hetsgd::cuda::detail
