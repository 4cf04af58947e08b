// CudaDevice's batch staging, forward pass and loss (see cuda_device.cuh).
#include <algorithm>
#include <climits>
#include <cstring>

#include "core/error.h"
#include "core/math/dropout.h"
#include "core/math/input_dropout.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/dense.cuh"
#include "kernels/cuda/dropout.cuh"

namespace hetsgd::cuda {

using detail::at_least_one;
namespace {

// Staging sections start on 256-byte boundaries (cuSPARSE and coalescing like aligned arrays).
size_t align_up(size_t bytes) { return (bytes + 255) & ~static_cast<size_t>(255); }

}  // namespace

// Packs the batch into pinned memory and uploads it on the device's stream. The previous
// public call ended with a synchronisation, so the pinned buffer is free to overwrite.
// cuSPARSE gets 32-bit row offsets: a batch must hold fewer than 2^31 nonzeros and labels
// (checked); datasets keep 64-bit offsets, only batches are narrowed.
CudaDevice::Staged CudaDevice::stage_batch(const CsrBatch& batch) {
  HETSGD_CHECK(batch.x_indptr.size() == batch.y_indptr.size(),
               "batch has " << batch.x_indptr.size() - 1 << " feature rows but "
                            << batch.y_indptr.size() - 1 << " label rows");
  Staged s;
  s.rows = batch.rows();
  const index_t x0 = batch.x_indptr.front();
  const index_t y0 = batch.y_indptr.front();
  s.nnz = batch.x_indptr.back() - x0;
  s.label_nnz = batch.y_indptr.back() - y0;
  HETSGD_CHECK(
      s.nnz < INT_MAX && s.label_nnz < INT_MAX && s.rows < INT_MAX,
      "CUDA batch too large for 32-bit offsets: nnz " << s.nnz << ", labels " << s.label_nnz);
  // Ids are checked on the host: an out-of-range id on the GPU would be a silent wild access.
  for (index_t e = x0; e < x0 + s.nnz; ++e) {
    const col_t f = batch.x_indices[e];
    HETSGD_CHECK(f >= 0 && f < config_.num_features,
                 "feature id " << f << " outside [0, " << config_.num_features << ")");
  }
  for (index_t e = y0; e < y0 + s.label_nnz; ++e) {
    const col_t l = batch.y_indices[e];
    HETSGD_CHECK(l >= 0 && l < config_.num_labels,
                 "label id " << l << " outside [0, " << config_.num_labels << ")");
  }
  const size_t off_xp = 0;
  const size_t off_xc = off_xp + align_up((s.rows + 1) * sizeof(int));
  const size_t off_xv = off_xc + align_up(s.nnz * sizeof(col_t));
  const size_t off_ro = off_xv + align_up(s.nnz * sizeof(float));
  const size_t off_yp = off_ro + align_up(s.nnz * sizeof(int));
  const size_t off_yi = off_yp + align_up((s.rows + 1) * sizeof(int));
  const size_t bytes = off_yi + align_up(std::max<index_t>(s.label_nnz, 1) * sizeof(col_t));

  dev_stage_.reserve(bytes, stream_);
  host_stage_.reserve(bytes);
  auto* h = static_cast<unsigned char*>(host_stage_.data());
  int* xp = reinterpret_cast<int*>(h + off_xp);
  int* ro = reinterpret_cast<int*>(h + off_ro);
  for (index_t r = 0; r <= s.rows; ++r) xp[r] = static_cast<int>(batch.x_indptr[r] - x0);
  for (index_t r = 0; r < s.rows; ++r) {
    for (int e = xp[r]; e < xp[r + 1]; ++e) ro[e] = static_cast<int>(r);
  }
  if (s.nnz > 0) {
    std::memcpy(h + off_xc, batch.x_indices.data() + x0, s.nnz * sizeof(col_t));
    std::memcpy(h + off_xv, batch.x_values.data() + x0, s.nnz * sizeof(float));
  }
  int* yp = reinterpret_cast<int*>(h + off_yp);
  for (index_t r = 0; r <= s.rows; ++r) yp[r] = static_cast<int>(batch.y_indptr[r] - y0);
  if (s.label_nnz > 0) {
    std::memcpy(h + off_yi, batch.y_indices.data() + y0, s.label_nnz * sizeof(col_t));
  }
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(dev_stage_.data(), h, bytes, cudaMemcpyHostToDevice, stream_));

  unsigned char* d = dev_stage_.data();
  s.x_indptr = reinterpret_cast<int*>(d + off_xp);
  s.x_cols = reinterpret_cast<col_t*>(d + off_xc);
  s.x_vals = reinterpret_cast<float*>(d + off_xv);
  s.row_of = reinterpret_cast<int*>(d + off_ro);
  s.y_indptr = reinterpret_cast<int*>(d + off_yp);
  s.y_idx = reinterpret_cast<col_t*>(d + off_yi);

  // Workspaces for this batch size, grown in stream order (no device-wide synchronisation).
  const auto& layers = layout_.layers();
  index_t max_h = 0;
  for (size_t l = 0; l < act_.size(); ++l) {
    act_[l].reserve(at_least_one(s.rows * layers[l].out), stream_);
    max_h = std::max(max_h, layers[l].out);
  }
  delta_[0].reserve(at_least_one(s.rows * max_h), stream_);
  delta_[1].reserve(at_least_one(s.rows * max_h), stream_);
  row_loss_.reserve(at_least_one(s.rows), stream_);
  if (ones_filled_ < s.rows) {
    ones_.reserve(static_cast<size_t>(s.rows), stream_);
    detail::launch_fill(ones_.data(), 1.0f, s.rows, stream_);
    ones_filled_ = s.rows;
  }
  return s;
}

const CsrBatch& CudaDevice::training_input(const CsrBatch& batch) {
  if (config_.input_dropout <= 0.0f) return batch;
  // On the host, before staging: the CPU device's very function and mask.
  math::drop_input_features(
      batch, config_.input_dropout,
      math::dropout_stream(config_.seed, ordinal_, step_, math::kInputDropoutLayer), &dropped_);
  return dropped_;
}

void CudaDevice::forward_hidden(const Staged& b, bool train) {
  const auto& layers = layout_.layers();
  const float* w = params_.data();
  // Training drops each hidden output with the CPU device's mask for this step and layer.
  const auto dropout = [&](size_t l) {
    if (!train || config_.dropout <= 0.0f) return;
    detail::launch_dropout_forward(
        act_[l].data(), b.rows * layers[l].out, config_.dropout,
        math::dropout_stream(config_.seed, ordinal_, step_, static_cast<int>(l)), stream_);
  };
  // Layer 0: act0 = relu(X W0 + b0) with X the CSR batch and W0 row-major d x h0.
  detail::sparse_forward(cusparse_, b.rows, layers[0].in, b.nnz, b.x_indptr, b.x_cols, b.x_vals,
                         w + layers[0].w_offset, h0_, act_[0].data(), sparse_, stream_);
  detail::launch_add_bias(act_[0].data(), w + layers[0].b_offset, b.rows, h0_, true, stream_);
  dropout(0);
  for (size_t l = 1; l + 1 < layers.size(); ++l) {
    const LayerSlice& s = layers[l];
    detail::dense_forward(cublas_, act_[l - 1].data(), b.rows, s.in, w + s.w_offset, s.out, s.out,
                          act_[l].data());
    detail::launch_add_bias(act_[l].data(), w + s.b_offset, b.rows, s.out, true, stream_);
    dropout(l);
  }
}

void CudaDevice::forward_output(const Staged& b) {
  const LayerSlice& s = layout_.layers().back();
  logits_.reserve(at_least_one(b.rows * s.out), stream_);
  const float* w = params_.data();
  detail::dense_forward_t(cublas_, act_.back().data(), b.rows, s.in, w + s.w_offset, s.out,
                          logits_.data());
  if (config_.loss != Loss::kSoftmax) {
    detail::launch_add_bias(logits_.data(), w + s.b_offset, b.rows, s.out, false, stream_);
  }
}

void CudaDevice::loss(const Staged& b, bool with_grad, float scale) {
  const index_t n = config_.num_labels;
  if (config_.loss == Loss::kSoftmax) {
    // The bias joins the logits inside the loss (forward_output left it out).
    const float* bias = params_.data() + layout_.layers().back().b_offset;
    detail::launch_softmax_ce_rows(logits_.data(), bias, b.rows, n, b.y_indptr, b.y_idx,
                                   scale / static_cast<float>(b.rows), with_grad, row_loss_.data(),
                                   softmax_, stream_, with_grad ? config_.label_smoothing : 0.0f);
  } else {
    // PyTorch's BCEWithLogitsLoss mean: over rows x labels elements.
    detail::launch_bce(logits_.data(), b.rows, n, b.y_indptr, b.y_idx,
                       scale / (static_cast<float>(b.rows) * static_cast<float>(n)), with_grad,
                       row_loss_.data(), stream_);
  }
  host_out_.reserve(b.rows * sizeof(float));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(host_out_.data(), row_loss_.data(), b.rows * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_));
}

float CudaDevice::mean_loss(index_t rows) const {
  const float* rl = static_cast<const float*>(host_out_.data());
  double sum = 0.0;
  for (index_t r = 0; r < rows; ++r) sum += rl[r];
  return static_cast<float>(sum / static_cast<double>(rows));
}

}  // namespace hetsgd::cuda
