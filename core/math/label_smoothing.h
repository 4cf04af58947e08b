/// \file core/math/label_smoothing.h
/// Label smoothing of the softmax cross-entropy, as corrections to the unsmoothed row, for host
/// and device code.
///
/// With smoothing e the target of a row with label set y (|y| >= 1) over n labels is
///   t_j = (1 - e) [j in y] / |y| + e / n,
/// so, with CE the unsmoothed row loss (core/math/softmax_ce.h),
///   loss = CE + e * (mean_{j in y} z_j - mean_j z_j)
///   dloss/dz_j = (softmax_j - [j in y] / |y|) - e / n + e [j in y] / |y|.
/// Rows without labels keep loss 0 and gradient 0 (they carry no target to smooth). e = 0 gives
/// the unsmoothed loss exactly; callers skip these corrections then, so results stay bitwise
/// those of the plain loss.
#pragma once

#include "core/hd.h"
#include "core/types.h"

namespace hetsgd::math {

/// The loss correction e * (mean_{j in y} z_j - mean_j z_j) from `z_sum` = sum_j z_j over the
/// row's `n` logits and `label_sum` = sum_{j in y} z_j over its `num_labels` (>= 1) labels.
HETSGD_HD inline float smoothing_loss_term(float e, double z_sum, index_t n, double label_sum,
                                           index_t num_labels) {
  return static_cast<float>(
      e * (label_sum / static_cast<double>(num_labels) - z_sum / static_cast<double>(n)));
}

/// Gradient correction on every logit of the row: -scale * e / n.
HETSGD_HD inline float smoothing_uniform_grad(float e, float scale, index_t n) {
  return -scale * e / static_cast<float>(n);
}

/// Gradient correction added once per label occurrence: +scale * e / |y|.
HETSGD_HD inline float smoothing_label_grad(float e, float scale, index_t num_labels) {
  return scale * e / static_cast<float>(num_labels);
}

}  // namespace hetsgd::math
