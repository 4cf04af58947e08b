// CudaDevice's backward pass, optimiser steps and chunked scoring (see cuda_device.cuh).
#include <algorithm>

#include "core/error.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/dense.cuh"
#include "kernels/cuda/device_guard.cuh"
#include "kernels/cuda/dropout.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/update.cuh"

namespace hetsgd::cuda {

using detail::at_least_one;

void CudaDevice::backward(const Staged& b) {
  const auto& layers = layout_.layers();
  const float* w = params_.data();
  float* g = grad_.data();
  const float* delta = logits_.data();  // rows x out of the current layer
  int next = 0;
  for (size_t l = layers.size() - 1; l >= 1; --l) {
    const LayerSlice& s = layers[l];
    float* da = delta_[next].data();
    // The output layer's weights are stored by label (core/param_layout.h).
    (s.by_output ? detail::dense_backward_t : detail::dense_backward)(
        cublas_, act_[l - 1].data(), delta, w + s.w_offset, b.rows, s.in, s.out, ones_.data(),
        g + s.w_offset, g + s.b_offset, da, stream_);
    // da is masked by the post-dropout activations; the kept ones carry 1 / (1 - p).
    if (config_.dropout > 0.0f) {
      detail::launch_dropout_backward(da, b.rows * s.in, config_.dropout, stream_);
    }
    delta = da;
    next ^= 1;
  }
  // First layer: bias by GEMV, weights row-sparse: distinct features, then a deterministic
  // segmented sum of X^T delta into the compact gradient. Its rows are bounded by nnz, so the
  // buffers are sized (and the compact gradient cleared) for nnz rows and the real count U never
  // has to reach the host.
  detail::bias_gradient(cublas_, delta, b.rows, h0_, ones_.data(), g + layers[0].b_offset);
  uniq_capacity_ = b.nnz;
  uniq_.reserve(at_least_one(b.nnz), stream_);
  compact_.reserve(at_least_one(b.nnz), stream_);
  detail::compact_features(b.x_cols, b.nnz, config_.num_features, uniq_.data(), compact_.data(),
                           counts_.data() + kUniqCount, sparse_, stream_);
  gc_.reserve(at_least_one(b.nnz * h0_), stream_);
  HETSGD_CUDA_CHECK(cudaMemsetAsync(gc_.data(), 0, b.nnz * h0_ * sizeof(float), stream_));
  detail::launch_scatter_rows(b.row_of, compact_.data(), counts_.data() + kUniqCount, b.x_vals,
                              b.nnz, delta, h0_, 1.0f, gc_.data(), sparse_, stream_);
}

void CudaDevice::update(float lr, const col_t* rows, const int* count, index_t capacity,
                        bool compact) {
  const OptimizerConfig& o = config_.optimizer;
  ++step_;
  detail::UpdateArgs a;
  a.adam = o.kind == OptimizerKind::kAdam;
  a.lr = lr;
  a.momentum = o.momentum;
  a.beta1 = o.beta1;
  a.beta2 = o.beta2;
  a.eps = o.eps;
  a.step = step_;
  float* w = params_.data();
  float* g = grad_.data();
  float* s1 = state1_.data();
  float* s2 = state2_.data();
  auto at = [](float* p, index_t off) { return p == nullptr ? nullptr : p + off; };
  const auto& layers = layout_.layers();
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerSlice& s = layers[l];
    a.weight_decay = o.weight_decay;
    if (l == 0) {
      detail::launch_update_rows(w + s.w_offset, compact ? gc_.data() : g + s.w_offset, compact,
                                 at(s1, s.w_offset), at(s2, s.w_offset), rows, count, capacity,
                                 s.out, a, stream_);
    } else {
      detail::launch_update_dense(w + s.w_offset, g + s.w_offset, at(s1, s.w_offset),
                                  at(s2, s.w_offset), s.in * s.out, a, stream_);
    }
    a.weight_decay = 0.0f;  // never on biases
    detail::launch_update_dense(w + s.b_offset, g + s.b_offset, at(s1, s.b_offset),
                                at(s2, s.b_offset), s.out, a, stream_);
  }
}

float CudaDevice::train_step(const CsrBatch& batch, float lr) {
  DeviceGuard guard(ordinal_);
  if (batch.rows() == 0) return 0.0f;
  const Staged b = stage_batch(training_input(batch));
  forward_hidden(b, true);
  forward_output(b);
  loss(b, true, 1.0f);
  backward(b);
  update(lr, uniq_.data(), counts_.data() + kUniqCount, uniq_capacity_, true);
  sync();  // the one host wait of a step
  return mean_loss(b.rows);
}

float CudaDevice::gradient(const CsrBatch& batch, float scale) {
  DeviceGuard guard(ordinal_);
  const LayerSlice& s0 = layout_.layers()[0];
  if (batch.rows() == 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(grad_.data(), 0, layout_.total() * sizeof(float), stream_));
    HETSGD_CUDA_CHECK(cudaMemsetAsync(counts_.data() + kGradRowsCount, 0, sizeof(int), stream_));
    sync();
    grad_rows_capacity_ = 0;
    grad_rows_all_ = false;
    return 0.0f;
  }
  const Staged b = stage_batch(training_input(batch));
  forward_hidden(b, true);
  forward_output(b);
  loss(b, true, scale);
  backward(b);
  // The dense buffer's first-layer block: zero, then the batch's rows (other blocks were
  // overwritten by the GEMMs). Zeroing the whole block costs one memset and equals the CPU's
  // clearing of the previous rows.
  HETSGD_CUDA_CHECK(
      cudaMemsetAsync(grad_.data() + s0.w_offset, 0, s0.in * s0.out * sizeof(float), stream_));
  detail::launch_expand_rows(grad_.data() + s0.w_offset, gc_.data(), uniq_.data(),
                             counts_.data() + kUniqCount, uniq_capacity_, h0_, stream_);
  // apply_update() updates exactly these rows (lazy state), like the CPU device. The list and
  // its count are copied on the GPU (the count never visits the host).
  grad_rows_.reserve(at_least_one(uniq_capacity_), stream_);
  if (uniq_capacity_ > 0) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(grad_rows_.data(), uniq_.data(),
                                      uniq_capacity_ * sizeof(col_t), cudaMemcpyDeviceToDevice,
                                      stream_));
  }
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(counts_.data() + kGradRowsCount, counts_.data() + kUniqCount,
                                    sizeof(int), cudaMemcpyDeviceToDevice, stream_));
  grad_rows_capacity_ = uniq_capacity_;
  grad_rows_all_ = false;
  sync();
  return mean_loss(b.rows);
}

void CudaDevice::apply_update(float lr) {
  DeviceGuard guard(ordinal_);
  const LayerSlice& s0 = layout_.layers()[0];
  if (grad_rows_all_) {
    // A gradient from outside (write_gradient, all-reduce): its touched rows are the nonzero
    // ones, found by a scan of the first-layer block.
    touched_.reserve(at_least_one(s0.in), stream_);
    detail::nonzero_rows(grad_.data() + s0.w_offset, s0.in, s0.out, touched_.data(),
                         counts_.data() + kTouchedCount, sparse_, stream_);
    update(lr, touched_.data(), counts_.data() + kTouchedCount, s0.in, false);
  } else {
    update(lr, grad_rows_.data(), counts_.data() + kGradRowsCount, grad_rows_capacity_, false);
  }
  sync();
}

// Evaluation and prediction: the output layer is scored chunk by chunk (a GEMM of rows x chunk
// logits, then the streaming loss and the running top-k), so memory is O(rows x chunk)
// whatever L is. The top-k equals the unchunked one exactly (a total order); the loss equals
// it up to float summation order.
float CudaDevice::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  DeviceGuard guard(ordinal_);
  HETSGD_CHECK(k >= 1 && k <= detail::kMaxTopK,
               "predict_topk: k " << k << " outside [1, " << detail::kMaxTopK << "]");
  if (batch.rows() == 0) return 0.0f;
  const auto [b, chunk] = begin_scoring(batch);
  const index_t n = config_.num_labels;
  topk_scores_.reserve(at_least_one(b.rows * k), stream_);
  topk_ids_.reserve(at_least_one(b.rows * k), stream_);
  for (index_t c0 = 0; c0 < n; c0 += chunk) {
    const index_t width = std::min(chunk, n - c0);
    const bool first = c0 == 0;
    chunk_logits(b.rows, c0, width);
    detail::launch_score_chunk(logits_.data(), b.rows, width, c0, b.y_indptr, b.y_idx, config_.loss,
                               first, score_state_.data(), stream_);
    detail::launch_topk_chunk(logits_.data(), b.rows, width, c0, k, first, topk_scores_.data(),
                              topk_ids_.data(), stream_);
  }
  detail::launch_score_finish(score_state_.data(), b.rows, n, b.y_indptr, config_.loss,
                              row_loss_.data(), stream_);
  host_out_.reserve(b.rows * sizeof(float));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(host_out_.data(), row_loss_.data(), b.rows * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(labels, topk_ids_.data(), b.rows * k * sizeof(col_t),
                                    cudaMemcpyDeviceToHost, stream_));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(scores, topk_scores_.data(), b.rows * k * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_));
  sync();
  return mean_loss(b.rows);
}

// The chunk is --score-chunk's labels, else as many as kScoreBudget allows for the batch's rows.
CudaDevice::ScoringPass CudaDevice::begin_scoring(const CsrBatch& batch) {
  const Staged b = stage_batch(batch);
  forward_hidden(b);
  index_t chunk = score_chunk_ > 0 ? score_chunk_ : kScoreBudget / b.rows;
  chunk = std::max<index_t>(1, std::min(chunk, config_.num_labels));
  logits_.reserve(at_least_one(b.rows * chunk), stream_);
  score_state_.reserve(at_least_one(b.rows), stream_);
  return {b, chunk};
}

void CudaDevice::chunk_logits(index_t rows, index_t c0, index_t width) {
  const LayerSlice& s = layout_.layers().back();
  const float* w = params_.data();
  detail::dense_forward_t(cublas_, act_.back().data(), rows, s.in, w + s.w_offset + c0 * s.in,
                          width, logits_.data());
  detail::launch_add_bias(logits_.data(), w + s.b_offset + c0, rows, width, false, stream_);
}

// Every label's logit, chunk by chunk as predict_topk scores them: each chunk's rows x width
// block is copied into its columns of the caller's rows x L array (a strided 2D copy).
float CudaDevice::score_all(const CsrBatch& batch, float* scores) {
  DeviceGuard guard(ordinal_);
  if (batch.rows() == 0) return 0.0f;
  const auto [b, chunk] = begin_scoring(batch);
  const index_t n = config_.num_labels;
  for (index_t c0 = 0; c0 < n; c0 += chunk) {
    const index_t width = std::min(chunk, n - c0);
    chunk_logits(b.rows, c0, width);
    HETSGD_CUDA_CHECK(cudaMemcpy2DAsync(scores + c0, n * sizeof(float), logits_.data(),
                                        width * sizeof(float), width * sizeof(float), b.rows,
                                        cudaMemcpyDeviceToHost, stream_));
    detail::launch_score_chunk(logits_.data(), b.rows, width, c0, b.y_indptr, b.y_idx, config_.loss,
                               c0 == 0, score_state_.data(), stream_);
  }
  detail::launch_score_finish(score_state_.data(), b.rows, n, b.y_indptr, config_.loss,
                              row_loss_.data(), stream_);
  host_out_.reserve(b.rows * sizeof(float));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(host_out_.data(), row_loss_.data(), b.rows * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_));
  sync();
  return mean_loss(b.rows);
}

}  // namespace hetsgd::cuda
