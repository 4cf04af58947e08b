#include "kernels/cpu/loss.h"

#include "core/error.h"
#include "core/math/label_smoothing.h"
#include "core/math/sigmoid_bce.h"
#include "core/math/softmax_ce.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowBlock = 16;

void check_labels(const CsrBatch& batch, index_t r, index_t num_labels) {
  for (index_t p = batch.y_indptr[r]; p < batch.y_indptr[r + 1]; ++p) {
    const col_t l = batch.y_indices[p];
    HETSGD_CHECK(l >= 0 && l < num_labels,
                 "label id " << l << " outside [0, " << num_labels << ") in batch row " << r);
  }
}

// Per-row BCE summed over labels (not yet divided); with `grad` it writes scale * dloss/dz.
// Labels are corrected after the all-negative pass: bce(x, 1) - bce(x, 0) = -x.
float bce_row(const float* z, index_t n, const col_t* labels, index_t nl, float scale,
              float* grad) {
  float s = 0.0f;
  for (index_t i = 0; i < nl; ++i) s -= z[labels[i]];
  for (index_t j = 0; j < n; ++j) {
    const float x = z[j];
    s += math::bce_loss(x, 0.0f);
    if (grad != nullptr) grad[j] = scale * math::bce_grad(x, 0.0f);
  }
  if (grad != nullptr) {
    for (index_t i = 0; i < nl; ++i) grad[labels[i]] -= scale;
  }
  return s;
}

// Softmax row with a smoothed target: the plain row, then the corrections of
// core/math/label_smoothing.h. The logit sums are read before the gradient overwrites z.
float smoothed_softmax_row(float* z, index_t n, const col_t* labels, index_t nl, float scale,
                           float e) {
  if (nl == 0) return vec::softmax_ce_row(z, n, labels, nl, scale, z);
  double z_sum = 0.0;
  for (index_t j = 0; j < n; ++j) z_sum += z[j];
  double label_sum = 0.0;
  for (index_t i = 0; i < nl; ++i) label_sum += z[labels[i]];
  const float ce = vec::softmax_ce_row(z, n, labels, nl, scale, z);
  const float u = math::smoothing_uniform_grad(e, scale, n);
  for (index_t j = 0; j < n; ++j) z[j] += u;
  const float t = math::smoothing_label_grad(e, scale, nl);
  for (index_t i = 0; i < nl; ++i) z[labels[i]] += t;
  return ce + math::smoothing_loss_term(e, z_sum, n, label_sum, nl);
}

}  // namespace

float mean_loss(const std::vector<float>& row_loss, index_t rows, index_t num_labels, Loss loss) {
  if (rows == 0) return 0.0f;
  double sum = 0.0;
  for (index_t r = 0; r < rows; ++r) sum += row_loss[r];
  const double denom =
      static_cast<double>(rows) * (loss == Loss::kBce ? static_cast<double>(num_labels) : 1.0);
  return static_cast<float>(sum / denom);
}

float loss_and_grad(const CsrBatch& batch, index_t num_labels, Loss loss, float scale, float* z,
                    std::vector<float>* row_loss, float smoothing) {
  HETSGD_CHECK(smoothing == 0.0f || loss == Loss::kSoftmax,
               "label smoothing " << smoothing << " needs the softmax loss");
  const index_t rows = batch.rows();
  row_loss->resize(static_cast<size_t>(rows));
  const float row_scale =
      rows == 0 ? 0.0f
                : scale / (static_cast<float>(rows) *
                           (loss == Loss::kBce ? static_cast<float>(num_labels) : 1.0f));
  for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      check_labels(batch, r, num_labels);
      const col_t* y = batch.y_indices.data() + batch.y_indptr[r];
      const index_t nl = batch.y_indptr[r + 1] - batch.y_indptr[r];
      float* zr = z + r * num_labels;
      if (smoothing > 0.0f) {
        (*row_loss)[r] = smoothed_softmax_row(zr, num_labels, y, nl, row_scale, smoothing);
        continue;
      }
      (*row_loss)[r] = loss == Loss::kSoftmax
                           ? vec::softmax_ce_row(zr, num_labels, y, nl, row_scale, zr)
                           : bce_row(zr, num_labels, y, nl, row_scale, zr);
    }
  });
  return mean_loss(*row_loss, rows, num_labels, loss);
}

float loss_only(const CsrBatch& batch, index_t num_labels, Loss loss, const float* z,
                std::vector<float>* row_loss) {
  const index_t rows = batch.rows();
  row_loss->resize(static_cast<size_t>(rows));
  for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      check_labels(batch, r, num_labels);
      const col_t* y = batch.y_indices.data() + batch.y_indptr[r];
      const index_t nl = batch.y_indptr[r + 1] - batch.y_indptr[r];
      const float* zr = z + r * num_labels;
      (*row_loss)[r] = loss == Loss::kSoftmax
                           ? vec::softmax_ce_row(zr, num_labels, y, nl, 1.0f, nullptr)
                           : bce_row(zr, num_labels, y, nl, 1.0f, nullptr);
    }
  });
  return mean_loss(*row_loss, rows, num_labels, loss);
}

}  // namespace hetsgd::cpu
