/// \file core/math/softmax_ce.h
/// Softmax cross-entropy against a normalised multi-hot target, one row at a time.
///
/// For logits z (length L) and label set y (|y| >= 1), the target is t_j = [j in y] / |y| and
///   loss = logsumexp(z) - (1/|y|) * sum_{j in y} z_j
///   dloss/dz_j = softmax(z)_j - t_j.
/// logsumexp is computed as m + log(sum_j exp(z_j - m)) with m = max_j z_j, so no exp overflows.
/// A row without labels has loss 0 and gradient 0 by convention (it carries no target).
///
/// The pieces (row max, sum of shifted exponentials, per-element gradient) are separate
/// functions so a CUDA kernel can compute the reductions with a block reduction and reuse the
/// exact per-element formulas; softmax_ce_row() composes them serially for the CPU backend.
/// All functions are usable from host and device code; none allocates or throws.
#pragma once

#include <math.h>

#include "core/hd.h"
#include "core/types.h"

namespace hetsgd::math {

/// Maximum of `z[0..n)`; -INFINITY for n == 0. Part one of a stable log-sum-exp.
HETSGD_HD inline float row_max(const float* z, index_t n) {
  float m = -INFINITY;
  for (index_t j = 0; j < n; ++j) m = z[j] > m ? z[j] : m;
  return m;
}

/// sum_j exp(z_j - m) over `z[0..n)`: part two of log-sum-exp. Every term is <= 1 when
/// m = row_max(z, n), so the sum is in [1, n] and never overflows.
HETSGD_HD inline float row_sum_exp(const float* z, index_t n, float m) {
  float s = 0.0f;
  for (index_t j = 0; j < n; ++j) s += expf(z[j] - m);
  return s;
}

/// Softmax cross-entropy loss of one row from its max `m` = row_max(z, n), `sum_exp` =
/// row_sum_exp(z, n, m), the logits `z` and the `num_labels` label ids `labels` (ids index into
/// z; duplicates count twice, as in the normalised target). Evaluated as
/// log(sum_exp) - mean_{j in y}(z_j - m), which avoids the cancellation of lse - z_j when the
/// logits are large. Returns 0 when `num_labels` == 0.
HETSGD_HD inline float softmax_ce_loss(float m, float sum_exp, const float* z, const col_t* labels,
                                       index_t num_labels) {
  if (num_labels == 0) return 0.0f;
  float s = 0.0f;
  for (index_t i = 0; i < num_labels; ++i) s += z[labels[i]] - m;
  return logf(sum_exp) - s / static_cast<float>(num_labels);
}

/// Gradient of the row's loss w.r.t. logit z_j, before any batch scaling:
/// softmax_j - target_j with softmax_j = exp(z_j - m) * inv_sum_exp and target_j = `target`
/// (1/|y| for j in y, else 0). `inv_sum_exp` = 1 / row_sum_exp(z, n, m).
HETSGD_HD inline float softmax_ce_grad(float z_j, float m, float inv_sum_exp, float target) {
  return expf(z_j - m) * inv_sum_exp - target;
}

/// One full row, serially: returns the loss and, if `grad` is not null, writes
/// `scale * dloss/dz` into grad[0..n). `grad` may alias `z`: the label terms are read first and
/// each z_j is read before grad_j is written. One exp per element: the shifted exponentials are
/// stored in grad and normalised afterwards. Rows without labels get loss 0 and a zero gradient.
/// `scale` is typically 1/batch_rows for a batch-mean loss.
HETSGD_HD inline float softmax_ce_row(const float* z, index_t n, const col_t* labels,
                                      index_t num_labels, float scale, float* grad) {
  if (num_labels == 0) {
    if (grad != nullptr) {
      for (index_t j = 0; j < n; ++j) grad[j] = 0.0f;
    }
    return 0.0f;
  }
  const float m = row_max(z, n);
  float label_sum = 0.0f;  // sum over labels of (z_j - m), read before grad overwrites z
  for (index_t i = 0; i < num_labels; ++i) label_sum += z[labels[i]] - m;
  float sum = 0.0f;
  if (grad != nullptr) {
    for (index_t j = 0; j < n; ++j) {
      const float e = expf(z[j] - m);
      grad[j] = e;
      sum += e;
    }
    const float inv = scale / sum;
    for (index_t j = 0; j < n; ++j) grad[j] *= inv;
    // Subtract the target afterwards so duplicate label ids accumulate, like the loss does.
    const float t = scale / static_cast<float>(num_labels);
    for (index_t i = 0; i < num_labels; ++i) grad[labels[i]] -= t;
  } else {
    sum = row_sum_exp(z, n, m);
  }
  return logf(sum) - label_sum / static_cast<float>(num_labels);
}

}  // namespace hetsgd::math
