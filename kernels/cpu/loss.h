/// \file kernels/cpu/loss.h
/// Output losses and top-k on the host, row-parallel over the caller's arena, built on the
/// shared per-element math of core/math/ (the CUDA kernels use the same formulas).
///
/// Reductions (the model's documented conventions):
/// - softmax: mean over ALL batch rows of the per-row cross-entropy against y/|y|; a row without
///   labels adds 0 to the sum and 0 to the gradient but counts in the denominator. This equals
///   PyTorch's `(-(y / y.sum(1).clamp(min=1)) * log_softmax(z)).sum(1).mean()` and makes the
///   mean of a batch the share-weighted mean of its parts (what synchronous SGD all-reduces).
/// - bce: PyTorch BCEWithLogitsLoss default, the mean over all rows x labels elements.
#pragma once

#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/types.h"

namespace hetsgd::cpu {

/// Loss of the logits `z` ([rows x num_labels]) against `batch`'s labels; overwrites `z` with
/// `scale` times the gradient of the mean loss. `row_loss` is scratch (resized to rows).
/// Returns the mean loss. Throws InvalidArgument when a label id is >= num_labels.
/// `smoothing` > 0 smooths the softmax target (core/math/label_smoothing.h; softmax only); 0
/// runs the plain loss unchanged.
float loss_and_grad(const CsrBatch& batch, index_t num_labels, Loss loss, float scale, float* z,
                    std::vector<float>* row_loss, float smoothing = 0.0f);

/// Mean loss (as above) of the logits `z` ([rows x num_labels]) against `batch`'s labels,
/// without a gradient. `row_loss` is scratch. Throws InvalidArgument like loss_and_grad().
float loss_only(const CsrBatch& batch, index_t num_labels, Loss loss, const float* z,
                std::vector<float>* row_loss);

/// The batch mean of `rows` per-row losses by the conventions above: over rows for softmax,
/// over rows x `num_labels` for bce; 0 for no rows.
float mean_loss(const std::vector<float>& row_loss, index_t rows, index_t num_labels, Loss loss);

}  // namespace hetsgd::cpu
