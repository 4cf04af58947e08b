// CudaDevice: the sparse MLP on one GPU (cuSPARSE SpMM, cuBLAS GEMM, fused loss and top-k).
// This file: construction, release, and the copies of parameters, gradient and optimiser
// state; cuda_device_forward.cu stages batches and runs the forward pass and the loss,
// cuda_device_train.cu the backward pass, the optimiser and scoring.
#include "kernels/cuda/cuda_device.cuh"

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device_guard.cuh"

namespace hetsgd::cuda {

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
  check_free_memory();
  // A throwing constructor runs no destructor: handles made before the failure are released
  // here (the buffers release themselves).
  try {
    create(options);
  } catch (...) {
    release();
    throw;
  }
}

// Before any allocation: a replica that cannot fit is refused with the numbers, instead of a
// CudaError from whichever cudaMalloc runs out first. Free memory is the GPU's, so virtual
// devices made one after another each see what the previous ones left.
void CudaDevice::check_free_memory() {
  DeviceGuard guard(ordinal_);
  size_t free = 0, total = 0;
  HETSGD_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::uint64_t need =
      estimate_replica_bytes(config_, kNominalBatchRows, kNominalBatchRows * 128);
  if (need > free) {
    throw MemoryBudgetExceeded(
        name_ + ": a replica of " + std::to_string(layout_.total()) + " parameters (" +
        std::to_string(config_.num_labels) + " labels) needs about " + format_bytes(need) +
        " of GPU memory at batch " + std::to_string(kNominalBatchRows) + " but only " +
        format_bytes(free) + " of " + format_bytes(total) +
        " are free (fewer virtual devices on this GPU, a smaller --hidden, or CPU workers)");
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
