// CudaDevice: the sparse MLP on one GPU (cuSPARSE SpMM, cuBLAS GEMM, fused loss and top-k).
#include "kernels/cuda/cuda_device.cuh"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device_guard.cuh"

namespace hetsgd::cuda {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

// Staging sections start on 256-byte boundaries (cuSPARSE and coalescing like aligned arrays).
size_t align_up(size_t bytes) { return (bytes + 255) & ~static_cast<size_t>(255); }

// Owns the cuSPARSE descriptors of one SpMM call.
struct SpmmDescriptors {
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnMatDescr_t b = nullptr, c = nullptr;
  ~SpmmDescriptors() {
    if (a != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroySpMat(a));
    if (b != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroyDnMat(b));
    if (c != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroyDnMat(c));
  }
};

}  // namespace

CudaDevice::CudaDevice(int ordinal, const ModelConfig& config, const DeviceOptions& options)
    : ordinal_(ordinal), config_(config), layout_(config), options_(options) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw DeviceUnavailable("cuda:" + std::to_string(ordinal) + ": only " + std::to_string(count) +
                            " CUDA device(s) present");
  }
  name_ = "cuda:" + std::to_string(ordinal) + " " + device_name(ordinal);
  h0_ = layout_.layers()[0].out;
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  HETSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  for (int i = 0; i < kSlots; ++i) {
    HETSGD_CUDA_CHECK(cudaEventCreateWithFlags(&copied_[i], cudaEventDisableTiming));
    HETSGD_CUDA_CHECK(cudaEventCreateWithFlags(&used_[i], cudaEventDisableTiming));
  }
  HETSGD_CUSPARSE_CHECK(cusparseCreate(&cusparse_));
  HETSGD_CUSPARSE_CHECK(cusparseSetStream(cusparse_, compute_));
  HETSGD_CUBLAS_CHECK(cublasCreate(&cublas_));
  HETSGD_CUBLAS_CHECK(cublasSetStream(cublas_, compute_));
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
  std::vector<float> init(total);
  init_params(layout_, config_.seed, init.data());
  HETSGD_CUDA_CHECK(
      cudaMemcpy(params_.data(), init.data(), total * sizeof(float), cudaMemcpyHostToDevice));
  HETSGD_CUDA_CHECK(cudaMemset(grad_.data(), 0, total * sizeof(float)));
  reset_optimizer();
  act_.resize(config_.hidden.size());
}

CudaDevice::~CudaDevice() {
  // Never throw from here: a failed GPU still has to release what it can.
  cudaError_t st = cudaSetDevice(ordinal_);
  if (st != cudaSuccess) (void)cudaGetLastError();
  if (compute_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(compute_));
  if (copy_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(copy_));
  if (cublas_ != nullptr) HETSGD_CUBLAS_CHECK_NOTHROW(cublasDestroy(cublas_));
  if (cusparse_ != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroy(cusparse_));
  for (int i = 0; i < kSlots; ++i) {
    if (copied_[i] != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaEventDestroy(copied_[i]));
    if (used_[i] != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaEventDestroy(used_[i]));
  }
  if (copy_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(copy_));
  if (compute_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(compute_));
}

void CudaDevice::sync_compute() { HETSGD_CUDA_CHECK(cudaStreamSynchronize(compute_)); }

void CudaDevice::synchronize() {
  DeviceGuard guard(ordinal_);
  sync_compute();
}

// Packs the batch into the pinned slot, uploads it on the copy stream and makes the compute
// stream wait for the upload. cuSPARSE gets 32-bit row offsets: a batch must hold fewer than
// 2^31 nonzeros and labels (checked); datasets keep 64-bit offsets, only batches are narrowed.
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

  slot_ = (slot_ + 1) % kSlots;
  const int k = slot_;
  // The pinned slot may still be the source of its previous upload; the device slot may still
  // be read by the previous batch's kernels.
  HETSGD_CUDA_CHECK(cudaEventSynchronize(copied_[k]));
  if (dev_stage_[k].size() < bytes) {
    HETSGD_CUDA_CHECK(cudaEventSynchronize(used_[k]));
    dev_stage_[k].reserve(bytes);
  }
  host_stage_[k].reserve(bytes);
  auto* h = static_cast<unsigned char*>(host_stage_[k].data());
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
  HETSGD_CUDA_CHECK(cudaStreamWaitEvent(copy_, used_[k], 0));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(dev_stage_[k].data(), h, bytes, cudaMemcpyHostToDevice, copy_));
  HETSGD_CUDA_CHECK(cudaEventRecord(copied_[k], copy_));
  HETSGD_CUDA_CHECK(cudaStreamWaitEvent(compute_, copied_[k], 0));

  unsigned char* d = dev_stage_[k].data();
  s.x_indptr = reinterpret_cast<int*>(d + off_xp);
  s.x_cols = reinterpret_cast<col_t*>(d + off_xc);
  s.x_vals = reinterpret_cast<float*>(d + off_xv);
  s.row_of = reinterpret_cast<int*>(d + off_ro);
  s.y_indptr = reinterpret_cast<int*>(d + off_yp);
  s.y_idx = reinterpret_cast<col_t*>(d + off_yi);

  // Workspaces for this batch size.
  const auto& layers = layout_.layers();
  index_t max_h = 0;
  for (size_t l = 0; l < act_.size(); ++l) {
    act_[l].reserve(static_cast<size_t>(s.rows * layers[l].out));
    max_h = std::max(max_h, layers[l].out);
  }
  logits_.reserve(static_cast<size_t>(s.rows * config_.num_labels));
  delta_[0].reserve(static_cast<size_t>(s.rows * max_h));
  delta_[1].reserve(static_cast<size_t>(s.rows * max_h));
  row_loss_.reserve(static_cast<size_t>(std::max<index_t>(s.rows, 1)));
  if (ones_.size() < static_cast<size_t>(s.rows)) {
    ones_.reserve(static_cast<size_t>(s.rows));
    const std::vector<float> ones(ones_.size(), 1.0f);
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(ones_.data(), ones.data(), ones.size() * sizeof(float),
                                      cudaMemcpyHostToDevice, compute_));
    sync_compute();  // `ones` is a pageable temporary
  }
  return s;
}

void CudaDevice::forward(const Staged& b) {
  const auto& layers = layout_.layers();
  float* w = params_.data();
  // Layer 0: act0 = relu(X W0 + b0) with X the CSR batch, W0 row-major d x h0 (cuSPARSE
  // SpMM, CSR_ALG2: row-major dense operands, deterministic).
  if (b.nnz == 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(act_[0].data(), 0, b.rows * h0_ * sizeof(float), compute_));
  } else {
    SpmmDescriptors desc;
    HETSGD_CUSPARSE_CHECK(cusparseCreateCsr(
        &desc.a, b.rows, layers[0].in, b.nnz, b.x_indptr, b.x_cols, b.x_vals, CUSPARSE_INDEX_32I,
        CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    HETSGD_CUSPARSE_CHECK(cusparseCreateDnMat(
        &desc.b, layers[0].in, h0_, h0_, w + layers[0].w_offset, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    HETSGD_CUSPARSE_CHECK(cusparseCreateDnMat(&desc.c, b.rows, h0_, h0_, act_[0].data(), CUDA_R_32F,
                                              CUSPARSE_ORDER_ROW));
    size_t bytes = 0;
    // CSR_ALG2 (row-major operands, deterministic) first; should a cuSPARSE version refuse it
    // for this shape, fall back once to the default algorithm and keep using that.
    cusparseStatus_t st = cusparseSpMM_bufferSize(
        cusparse_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne,
        desc.a, desc.b, &kZero, desc.c, CUDA_R_32F, spmm_alg_, &bytes);
    if (st != CUSPARSE_STATUS_SUCCESS && spmm_alg_ != CUSPARSE_SPMM_ALG_DEFAULT) {
      spmm_alg_ = CUSPARSE_SPMM_ALG_DEFAULT;
      st = cusparseSpMM_bufferSize(cusparse_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, desc.a, desc.b, &kZero,
                                   desc.c, CUDA_R_32F, spmm_alg_, &bytes);
    }
    HETSGD_CUSPARSE_CHECK(st);
    if (spmm_buffer_.size() < bytes) {
      sync_compute();  // the old buffer may still be in use by the previous SpMM
      spmm_buffer_.reserve(bytes);
    }
    HETSGD_CUSPARSE_CHECK(cusparseSpMM(cusparse_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, desc.a, desc.b,
                                       &kZero, desc.c, CUDA_R_32F, spmm_alg_, spmm_buffer_.data()));
  }
  detail::launch_add_bias(act_[0].data(), w + layers[0].b_offset, b.rows, h0_, true, compute_);
  // Dense layers: Z (rows x out) = A (rows x in) W (in x out), all row-major. cuBLAS is
  // column-major, so compute Z^T = W^T A^T: the row-major buffers are exactly those transposes.
  for (size_t l = 1; l < layers.size(); ++l) {
    const LayerSlice& s = layers[l];
    const bool last = l + 1 == layers.size();
    float* out = last ? logits_.data() : act_[l].data();
    HETSGD_CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s.out),
                                    static_cast<int>(b.rows), static_cast<int>(s.in), &kOne,
                                    w + s.w_offset, static_cast<int>(s.out), act_[l - 1].data(),
                                    static_cast<int>(s.in), &kZero, out, static_cast<int>(s.out)));
    detail::launch_add_bias(out, w + s.b_offset, b.rows, s.out, !last, compute_);
  }
}

float CudaDevice::loss(const Staged& b, bool with_grad, float scale) {
  const index_t n = config_.num_labels;
  if (config_.loss == Loss::kSoftmax) {
    detail::launch_softmax_ce(logits_.data(), b.rows, n, b.y_indptr, b.y_idx,
                              scale / static_cast<float>(b.rows), with_grad, row_loss_.data(),
                              compute_);
  } else {
    // PyTorch's BCEWithLogitsLoss mean: over rows x labels elements.
    detail::launch_bce(logits_.data(), b.rows, n, b.y_indptr, b.y_idx,
                       scale / (static_cast<float>(b.rows) * static_cast<float>(n)), with_grad,
                       row_loss_.data(), compute_);
  }
  host_out_.reserve(b.rows * sizeof(float));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(host_out_.data(), row_loss_.data(), b.rows * sizeof(float),
                                    cudaMemcpyDeviceToHost, compute_));
  sync_compute();
  const float* rl = static_cast<const float*>(host_out_.data());
  double sum = 0.0;
  for (index_t r = 0; r < b.rows; ++r) sum += rl[r];
  return static_cast<float>(sum / static_cast<double>(b.rows));
}

void CudaDevice::backward(const Staged& b) {
  const auto& layers = layout_.layers();
  float* w = params_.data();
  float* g = grad_.data();
  const int rows = static_cast<int>(b.rows);
  const float* delta = logits_.data();  // rows x out of the current layer
  int next = 0;
  for (size_t l = layers.size() - 1; l >= 1; --l) {
    const LayerSlice& s = layers[l];
    const int in = static_cast<int>(s.in), out = static_cast<int>(s.out);
    // dW (in x out, row-major) = A^T delta  <=>  dW^T = delta^T A in column-major terms.
    HETSGD_CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, out, in, rows, &kOne, delta,
                                    out, act_[l - 1].data(), in, &kZero, g + s.w_offset, out));
    // db = column sums of delta (GEMV against ones).
    HETSGD_CUBLAS_CHECK(cublasSgemv(cublas_, CUBLAS_OP_N, out, rows, &kOne, delta, out,
                                    ones_.data(), 1, &kZero, g + s.b_offset, 1));
    // dA (rows x in) = delta W^T  <=>  dA^T = W delta^T, masked by ReLU'(A).
    float* da = delta_[next].data();
    HETSGD_CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, in, rows, out, &kOne,
                                    w + s.w_offset, out, delta, out, &kZero, da, in));
    detail::launch_relu_backward(da, act_[l - 1].data(), b.rows * s.in, compute_);
    delta = da;
    next ^= 1;
  }
  // First layer: bias by GEMV, weights row-sparse: distinct features, then an atomic scatter
  // of X^T delta into the compact U x h0 gradient.
  HETSGD_CUBLAS_CHECK(cublasSgemv(cublas_, CUBLAS_OP_N, static_cast<int>(h0_), rows, &kOne, delta,
                                  static_cast<int>(h0_), ones_.data(), 1, &kZero,
                                  g + layers[0].b_offset, 1));
  uniq_.reserve(static_cast<size_t>(std::max<index_t>(b.nnz, 1)));
  compact_.reserve(static_cast<size_t>(std::max<index_t>(b.nnz, 1)));
  uniq_count_ = detail::compact_features(b.x_cols, b.nnz, uniq_.data(), compact_.data(), compute_);
  gc_.reserve(static_cast<size_t>(std::max<index_t>(uniq_count_ * h0_, 1)));
  HETSGD_CUDA_CHECK(cudaMemsetAsync(gc_.data(), 0, uniq_count_ * h0_ * sizeof(float), compute_));
  detail::launch_scatter_rows(b.row_of, compact_.data(), b.x_vals, b.nnz, delta, h0_, 1.0f,
                              gc_.data(), compute_);
}

void CudaDevice::update(float lr, const col_t* rows, index_t count, bool compact) {
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
                                 at(s1, s.w_offset), at(s2, s.w_offset), rows, count, s.out, a,
                                 compute_);
    } else {
      detail::launch_update_dense(w + s.w_offset, g + s.w_offset, at(s1, s.w_offset),
                                  at(s2, s.w_offset), s.in * s.out, a, compute_);
    }
    a.weight_decay = 0.0f;  // never on biases
    detail::launch_update_dense(w + s.b_offset, g + s.b_offset, at(s1, s.b_offset),
                                at(s2, s.b_offset), s.out, a, compute_);
  }
}

float CudaDevice::train_step(const CsrBatch& batch, float lr) {
  DeviceGuard guard(ordinal_);
  if (batch.rows() == 0) return 0.0f;
  const Staged b = stage_batch(batch);
  forward(b);
  const float mean_loss = loss(b, true, 1.0f);
  backward(b);
  update(lr, uniq_.data(), uniq_count_, true);
  HETSGD_CUDA_CHECK(cudaEventRecord(used_[slot_], compute_));
  sync_compute();
  return mean_loss;
}

float CudaDevice::gradient(const CsrBatch& batch, float scale) {
  DeviceGuard guard(ordinal_);
  const LayerSlice& s0 = layout_.layers()[0];
  if (batch.rows() == 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(grad_.data(), 0, layout_.total() * sizeof(float), compute_));
    sync_compute();
    grad_rows_count_ = 0;
    grad_rows_all_ = false;
    return 0.0f;
  }
  const Staged b = stage_batch(batch);
  forward(b);
  const float mean_loss = loss(b, true, scale);
  backward(b);
  // The dense buffer's first-layer block: zero, then the batch's rows (other blocks were
  // overwritten by the GEMMs). Zeroing the whole block costs one memset and equals the CPU's
  // clearing of the previous rows.
  HETSGD_CUDA_CHECK(
      cudaMemsetAsync(grad_.data() + s0.w_offset, 0, s0.in * s0.out * sizeof(float), compute_));
  detail::launch_expand_rows(grad_.data() + s0.w_offset, gc_.data(), uniq_.data(), uniq_count_, h0_,
                             compute_);
  // apply_update() updates exactly these rows (lazy state), like the CPU device.
  grad_rows_.reserve(static_cast<size_t>(std::max<index_t>(uniq_count_, 1)));
  if (uniq_count_ > 0) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(grad_rows_.data(), uniq_.data(), uniq_count_ * sizeof(col_t),
                                      cudaMemcpyDeviceToDevice, compute_));
  }
  grad_rows_count_ = uniq_count_;
  grad_rows_all_ = false;
  HETSGD_CUDA_CHECK(cudaEventRecord(used_[slot_], compute_));
  sync_compute();
  return mean_loss;
}

void CudaDevice::apply_update(float lr) {
  DeviceGuard guard(ordinal_);
  const LayerSlice& s0 = layout_.layers()[0];
  if (grad_rows_all_) {
    // A gradient from outside (write_gradient, all-reduce): its touched rows are the nonzero
    // ones, found by a scan of the first-layer block.
    touched_.reserve(static_cast<size_t>(s0.in));
    const index_t count =
        detail::nonzero_rows(grad_.data() + s0.w_offset, s0.in, s0.out, touched_.data(), compute_);
    update(lr, touched_.data(), count, false);
  } else {
    update(lr, grad_rows_.data(), grad_rows_count_, false);
  }
  sync_compute();
}

float CudaDevice::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  DeviceGuard guard(ordinal_);
  HETSGD_CHECK(k >= 1 && k <= detail::kMaxTopK,
               "predict_topk: k " << k << " outside [1, " << detail::kMaxTopK << "]");
  if (batch.rows() == 0) return 0.0f;
  const Staged b = stage_batch(batch);
  forward(b);
  const float mean_loss = loss(b, false, 1.0f);
  topk_scores_.reserve(static_cast<size_t>(b.rows * k));
  topk_ids_.reserve(static_cast<size_t>(b.rows * k));
  detail::launch_topk(logits_.data(), b.rows, config_.num_labels, k, topk_scores_.data(),
                      topk_ids_.data(), compute_);
  HETSGD_CUDA_CHECK(cudaEventRecord(used_[slot_], compute_));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(labels, topk_ids_.data(), b.rows * k * sizeof(col_t),
                                    cudaMemcpyDeviceToHost, compute_));
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(scores, topk_scores_.data(), b.rows * k * sizeof(float),
                                    cudaMemcpyDeviceToHost, compute_));
  sync_compute();
  return mean_loss;
}

void CudaDevice::read_params(float* dst) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, params_.data(), layout_.total() * sizeof(float),
                                    cudaMemcpyDeviceToHost, compute_));
  sync_compute();
}

void CudaDevice::write_params(const float* src) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(params_.data(), src, layout_.total() * sizeof(float),
                                    cudaMemcpyHostToDevice, compute_));
  sync_compute();
}

void CudaDevice::read_gradient(float* dst) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, grad_.data(), layout_.total() * sizeof(float),
                                    cudaMemcpyDeviceToHost, compute_));
  sync_compute();
}

void CudaDevice::write_gradient(const float* src) {
  DeviceGuard guard(ordinal_);
  HETSGD_CUDA_CHECK(cudaMemcpyAsync(grad_.data(), src, layout_.total() * sizeof(float),
                                    cudaMemcpyHostToDevice, compute_));
  sync_compute();
  grad_rows_all_ = true;
}

void CudaDevice::reset_optimizer() {
  DeviceGuard guard(ordinal_);
  step_ = 0;
  if (state1_.size() > 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(state1_.data(), 0, state1_.size() * sizeof(float), compute_));
  }
  if (state2_.size() > 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(state2_.data(), 0, state2_.size() * sizeof(float), compute_));
  }
  sync_compute();
}

OptimizerState CudaDevice::read_optimizer() {
  DeviceGuard guard(ordinal_);
  OptimizerState s;
  s.first.resize(state1_.size());
  s.second.resize(state2_.size());
  if (!s.first.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(s.first.data(), state1_.data(),
                                      s.first.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                      compute_));
  }
  if (!s.second.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(s.second.data(), state2_.data(),
                                      s.second.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                      compute_));
  }
  sync_compute();
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
                                      compute_));
  }
  if (!state.second.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(state2_.data(), state.second.data(),
                                      state.second.size() * sizeof(float), cudaMemcpyHostToDevice,
                                      compute_));
  }
  sync_compute();
  step_ = state.steps;
}

std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options) {
  return std::make_unique<CudaDevice>(ordinal, config, options);
}

}  // namespace hetsgd::cuda
