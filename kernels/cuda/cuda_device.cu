// CudaDevice: the sparse MLP on one GPU (cuSPARSE SpMM, cuBLAS GEMM, fused loss and top-k).
#include "kernels/cuda/cuda_device.cuh"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/math/dropout.h"
#include "core/math/input_dropout.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dense.cuh"
#include "kernels/cuda/device_guard.cuh"
#include "kernels/cuda/dropout.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/update.cuh"

namespace hetsgd::cuda {
namespace {

// Staging sections start on 256-byte boundaries (cuSPARSE and coalescing like aligned arrays).
size_t align_up(size_t bytes) { return (bytes + 255) & ~static_cast<size_t>(255); }

size_t at_least_one(index_t n) { return static_cast<size_t>(std::max<index_t>(n, 1)); }

}  // namespace

bool config_requests_shortlist(const ModelConfig& config) {
  // `auto` scores every label here (exact, chunked); only an explicit request is refused.
  return config.output_layer == OutputLayer::kShortlist;
}

CudaDevice::CudaDevice(int ordinal, const ModelConfig& config, const DeviceOptions& options)
    : ordinal_(ordinal), config_(config), layout_(config) {
  if (config_requests_shortlist(config)) {
    throw InvalidArgument(
        "the shortlisted output layer is CPU-only: cuda:" + std::to_string(ordinal) +
        " scores every label (use --output-layer=full on CUDA devices, or CPU workers)");
  }
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw DeviceUnavailable("cuda:" + std::to_string(ordinal) + ": only " + std::to_string(count) +
                            " CUDA device(s) present");
  }
  name_ = "cuda:" + std::to_string(ordinal) + " " + device_name(ordinal);
  h0_ = layout_.layers()[0].out;
  // A throwing constructor runs no destructor: handles made before the failure are released
  // here (the buffers release themselves).
  try {
    create(options);
  } catch (...) {
    release();
    throw;
  }
}

void CudaDevice::create(const DeviceOptions& options) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  HETSGD_CUSPARSE_CHECK(cusparseCreate(&cusparse_));
  HETSGD_CUSPARSE_CHECK(cusparseSetStream(cusparse_, stream_));
  HETSGD_CUBLAS_CHECK(cublasCreate(&cublas_));
  HETSGD_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  HETSGD_CUBLAS_CHECK(
      cublasSetMathMode(cublas_, options.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));

  const size_t total = static_cast<size_t>(layout_.total());
  params_.resize(total);
  grad_.resize(total);
  if (config_.optimizer.kind == OptimizerKind::kAdam) {
    state1_.resize(total);
    state2_.resize(total);
  } else if (config_.optimizer.momentum != 0.0f) {
    state1_.resize(total);
  }
  counts_.resize(kCounts);
  std::vector<float> init(total);
  init_params(layout_, config_.seed, init.data());
  // On the device's own stream: the legacy default stream is not ordered with a non-blocking
  // stream, so an upload there could still be in flight when the first SpMM reads the weights.
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(params_.data(), init.data(), total * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
  HETSGD_CUDA_CHECK(cudaMemsetAsync(grad_.data(), 0, total * sizeof(float), stream_));
  HETSGD_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, kCounts * sizeof(int), stream_));
  act_.resize(config_.hidden.size());
  reset_optimizer();  // synchronises: `init` is pageable and goes out of scope
}

CudaDevice::~CudaDevice() { release(); }

void CudaDevice::release() noexcept {
  // Never throw from here: a failed GPU still has to release what it can.
  if (cudaSetDevice(ordinal_) != cudaSuccess) (void)cudaGetLastError();
  if (stream_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));
  if (cublas_ != nullptr) HETSGD_CUBLAS_CHECK_NOTHROW(cublasDestroy(cublas_));
  if (cusparse_ != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroy(cusparse_));
  if (stream_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  cublas_ = nullptr;
  cusparse_ = nullptr;
  stream_ = nullptr;
}

void CudaDevice::sync() { HETSGD_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaDevice::synchronize() {
  DeviceGuard guard(ordinal_);
  sync();
}

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
  detail::launch_add_bias(logits_.data(), w + s.b_offset, b.rows, s.out, false, stream_);
}

void CudaDevice::loss(const Staged& b, bool with_grad, float scale) {
  const index_t n = config_.num_labels;
  if (config_.loss == Loss::kSoftmax) {
    detail::launch_softmax_ce(logits_.data(), b.rows, n, b.y_indptr, b.y_idx,
                              scale / static_cast<float>(b.rows), with_grad, row_loss_.data(),
                              stream_, with_grad ? config_.label_smoothing : 0.0f);
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
  // First layer: bias by GEMV, weights row-sparse: distinct features, then an atomic scatter
  // of X^T delta into the compact gradient. Its rows are bounded by nnz, so the buffers are
  // sized (and the compact gradient cleared) for nnz rows and the real count U never has to
  // reach the host.
  detail::bias_gradient(cublas_, delta, b.rows, h0_, ones_.data(), g + layers[0].b_offset);
  uniq_capacity_ = b.nnz;
  uniq_.reserve(at_least_one(b.nnz), stream_);
  compact_.reserve(at_least_one(b.nnz), stream_);
  detail::compact_features(b.x_cols, b.nnz, config_.num_features, uniq_.data(), compact_.data(),
                           counts_.data() + kUniqCount, sparse_, stream_);
  gc_.reserve(at_least_one(b.nnz * h0_), stream_);
  HETSGD_CUDA_CHECK(cudaMemsetAsync(gc_.data(), 0, b.nnz * h0_ * sizeof(float), stream_));
  detail::launch_scatter_rows(b.row_of, compact_.data(), b.x_vals, b.nnz, delta, h0_, 1.0f,
                              gc_.data(), stream_);
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
  const Staged b = stage_batch(batch);
  forward_hidden(b);
  const LayerSlice& s = layout_.layers().back();
  const index_t n = config_.num_labels;
  index_t chunk = score_chunk_ > 0 ? score_chunk_ : kScoreBudget / b.rows;
  chunk = std::max<index_t>(1, std::min(chunk, n));
  logits_.reserve(at_least_one(b.rows * chunk), stream_);
  score_state_.reserve(at_least_one(b.rows), stream_);
  topk_scores_.reserve(at_least_one(b.rows * k), stream_);
  topk_ids_.reserve(at_least_one(b.rows * k), stream_);
  const float* w = params_.data();
  for (index_t c0 = 0; c0 < n; c0 += chunk) {
    const index_t width = std::min(chunk, n - c0);
    const bool first = c0 == 0;
    detail::dense_forward_t(cublas_, act_.back().data(), b.rows, s.in, w + s.w_offset + c0 * s.in,
                            width, logits_.data());
    detail::launch_add_bias(logits_.data(), w + s.b_offset + c0, b.rows, width, false, stream_);
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

void CudaDevice::read_params(float* dst) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, params_.data(), layout_.total() * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_));
  sync();
}

void CudaDevice::write_params(const float* src) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(params_.data(), src, layout_.total() * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
  sync();
}

void CudaDevice::read_gradient(float* dst) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, grad_.data(), layout_.total() * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_));
  sync();
}

void CudaDevice::write_gradient(const float* src) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(grad_.data(), src, layout_.total() * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
  sync();
  grad_rows_all_ = true;
}

void CudaDevice::reset_optimizer() {
  DeviceGuard guard(ordinal_);
  step_ = 0;
  if (state1_.size() > 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(state1_.data(), 0, state1_.size() * sizeof(float), stream_));
  }
  if (state2_.size() > 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(state2_.data(), 0, state2_.size() * sizeof(float), stream_));
  }
  sync();
}

OptimizerState CudaDevice::read_optimizer() {
  DeviceGuard guard(ordinal_);
  OptimizerState s;
  s.first.resize(state1_.size());
  s.second.resize(state2_.size());
  if (!s.first.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(s.first.data(), state1_.data(),
                                      s.first.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                      stream_));
  }
  if (!s.second.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(s.second.data(), state2_.data(),
                                      s.second.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                      stream_));
  }
  sync();
  s.steps = step_;
  return s;
}

void CudaDevice::write_optimizer(const OptimizerState& state) {
  HETSGD_CHECK(state.first.size() == state1_.size() && state.second.size() == state2_.size(),
               "optimiser state of " << state.first.size() << " + " << state.second.size()
                                     << " floats does not fit " << name());
  HETSGD_CHECK(state.steps >= 0, "optimiser step count " << state.steps << " < 0");
  DeviceGuard guard(ordinal_);
  if (!state.first.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(state1_.data(), state.first.data(),
                                      state.first.size() * sizeof(float), cudaMemcpyHostToDevice,
                                      stream_));
  }
  if (!state.second.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(state2_.data(), state.second.data(),
                                      state.second.size() * sizeof(float), cudaMemcpyHostToDevice,
                                      stream_));
  }
  sync();
  step_ = state.steps;
}

std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options) {
  return std::make_unique<CudaDevice>(ordinal, config, options);
}

}  // namespace hetsgd::cuda
