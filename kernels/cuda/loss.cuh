/// \file kernels/cuda/loss.cuh
/// Fused output-layer losses on one GPU: softmax cross-entropy and sigmoid BCE over a whole
/// logits matrix (training), and the same losses streamed over label chunks (evaluation and
/// prediction, no batch x L buffer). Twin of kernels/cpu/loss.cpp (nvcc-only header).
///
/// Per-element formulas come from core/math/*.h, the code the CPU backend runs. One block per
/// row, except launch_softmax_ce_rows (several per row); launchers enqueue on `stream` and do
/// not synchronise.
#pragma once

#include <cuda_runtime.h>

#include "core/model_config.h"
#include "core/types.h"
#include "kernels/cuda/device_buffer.cuh"

namespace hetsgd::cuda::detail {

/// Fused softmax cross-entropy over each row of `z` (`rows` x `n`): row_loss[r] gets the row's
/// loss (core/math/softmax_ce.h); when `with_grad`, z is overwritten by `scale` * dloss/dz.
/// Labels are CSR with 32-bit offsets `y_indptr` (rows + 1, starting at 0) into `y_idx`.
/// Labels are read before any logit is overwritten. `smoothing` > 0 smooths the target
/// (core/math/label_smoothing.h, the CPU's loss_and_grad twin); 0 runs the plain loss.
void launch_softmax_ce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                       float scale, bool with_grad, float* row_loss, cudaStream_t stream,
                       float smoothing = 0.0f);

/// Per-segment state of launch_softmax_ce_rows: max, sum of exp(z - max), sum of z.
struct SoftmaxPartial {
  float max;
  float sum_exp;
  float sum;
};

/// Scratch of launch_softmax_ce_rows, grown stream-ordered (rows x segments partials).
struct SoftmaxScratch {
  DeviceBuffer<SoftmaxPartial> partials;
  DeviceBuffer<double> label_sum;
};

/// Labels per segment below which launch_softmax_ce_rows does not split a row further, and
/// the most segments per row: 670,091 labels become 128 segments of 5,236.
inline constexpr index_t kSoftmaxSegmentMin = 4096;
inline constexpr index_t kSoftmaxMaxSegments = 128;

/// Segments launch_softmax_ce_rows splits a row of `n` labels into.
index_t softmax_segments(index_t n);

/// launch_softmax_ce for the training step: the same loss and gradient, with the bias `bias`
/// (n floats, or null) added to every row on the fly, and each row split into
/// softmax_segments(n) blocks, so that a small batch of long rows keeps the GPU's memory busy
/// (two passes over the logits: partial max / sum-exp per segment, then the gradient). `z` is
/// overwritten by `scale` * dloss/d(z + bias) when `with_grad`. At most 65,535 rows.
void launch_softmax_ce_rows(float* z, const float* bias, index_t rows, index_t n,
                            const int* y_indptr, const col_t* y_idx, float scale, bool with_grad,
                            float* row_loss, SoftmaxScratch& scratch, cudaStream_t stream,
                            float smoothing = 0.0f);

/// One-vs-all sigmoid BCE (core/math/sigmoid_bce.h): row_loss[r] = mean over the n labels of
/// the row's element losses; when `with_grad`, z is overwritten by `scale` * dloss_elem/dz
/// (the caller folds 1/(rows*n) into `scale`). Label ids of a row must be distinct.
void launch_bce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                float scale, bool with_grad, float* row_loss, cudaStream_t stream);

/// Running per-row state of a loss streamed over label chunks: the softmax's running max and
/// sum of shifted exponentials (a streaming log-sum-exp), the sum of the row's label logits,
/// and the BCE's running sum of element losses.
struct ScoreState {
  float max;
  float sum_exp;
  double label_sum;  ///< softmax: sum of z_y; BCE: sum of bce(z_y, 1) - bce(z_y, 0)
  double elem_sum;   ///< BCE: sum of bce(z_j, 0) over the labels seen so far
};

/// Folds the chunk `z` (`rows` x `n`: logits of labels [c0, c0 + n)) into `state` (rows
/// entries; `first` starts them). Labels as in launch_softmax_ce; labels outside the chunk
/// are skipped, so after every chunk each label was counted exactly once.
void launch_score_chunk(const float* z, index_t rows, index_t n, index_t c0, const int* y_indptr,
                        const col_t* y_idx, Loss loss, bool first, ScoreState* state,
                        cudaStream_t stream);

/// row_loss[r] from the state after the last chunk (`num_labels` = L): the same value as
/// launch_softmax_ce / launch_bce on the whole row, up to float summation order.
void launch_score_finish(const ScoreState* state, index_t rows, index_t num_labels,
                         const int* y_indptr, Loss loss, float* row_loss, cudaStream_t stream);

}  // namespace hetsgd::cuda::detail
