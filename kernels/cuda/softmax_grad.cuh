/// \file kernels/cuda/softmax_grad.cuh
/// The softmax cross-entropy gradient write shared by the one-block-per-row kernel (loss.cu)
/// and the segmented one (softmax_rows.cu) (nvcc-only header).
#pragma once

#include "core/math/label_smoothing.h"
#include "core/math/softmax_ce.h"
#include "core/types.h"

namespace hetsgd::cuda::detail {

/// Logit j of a row: zr[j], plus the output layer's bias when `bias` is not null (the
/// segmented kernel adds it on the fly).
__device__ inline float logit(const float* zr, const float* bias, index_t j) {
  return bias != nullptr ? zr[j] + bias[j] : zr[j];
}

/// Writes the gradient of elements [j0, j1) of a row of n logits over zr, from the row's max
/// `m` and sum of shifted exponentials `sum_exp`: scale * softmax plus label smoothing's uniform
/// term, then the targets of the row's `ny` labels `y` that fall inside [j0, j1). The labels are
/// subtracted by thread 0, serially on purpose: duplicate label ids must accumulate like the
/// loss counts them. Every thread of the block must call it (it synchronises the block).
__device__ inline void write_softmax_grad(float* zr, const float* bias, index_t n, index_t j0,
                                          index_t j1, float m, float sum_exp, float scale,
                                          float smoothing, const col_t* y, int ny) {
  const float inv = scale / sum_exp;
  const float u = smoothing > 0.0f ? math::smoothing_uniform_grad(smoothing, scale, n) : 0.0f;
  for (index_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
    const float g = math::softmax_ce_grad(logit(zr, bias, j), m, inv, 0.0f);
    zr[j] = smoothing > 0.0f ? g + u : g;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const float t = scale / static_cast<float>(ny);
    const float ts = math::smoothing_label_grad(smoothing, scale, ny);
    for (int i = 0; i < ny; ++i) {
      const index_t yi = y[i];
      if (yi < j0 || yi >= j1) continue;
      zr[yi] -= t;
      if (smoothing > 0.0f) zr[yi] += ts;
    }
  }
}

}  // namespace hetsgd::cuda::detail
