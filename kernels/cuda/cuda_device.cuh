/// \file kernels/cuda/cuda_device.cuh
/// CudaDevice: one model replica in the memory of one GPU (nvcc-only header).
///
/// Parameters, gradient and optimiser state are device buffers in the ParamLayout order, so a
/// communicator merges replicas with single calls on raw pointers. Several CudaDevices may
/// share one GPU (virtual devices): each has its own streams and handles and only ever
/// synchronises its own streams.
///
/// Streams: `compute` runs every kernel, cuBLAS and cuSPARSE call; `copy` uploads batches from
/// pinned staging buffers (two slots, alternating), with events ordering copy -> compute and
/// compute -> next reuse of the slot. Public calls return when their results are in host
/// memory (they synchronise `compute`), except that nothing waits for the upload of a batch
/// before its host staging has been packed.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <string>
#include <vector>

#include "core/device.h"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/kernels.cuh"

namespace hetsgd::cuda {

/// A Device on GPU `ordinal` (see core/device.h for the operations' contracts).
class CudaDevice final : public Device {
 public:
  /// Allocates and initialises the replica from `config.seed`. Throws DeviceUnavailable when
  /// the GPU does not exist, CudaError on allocation failure.
  CudaDevice(int ordinal, const ModelConfig& config, const DeviceOptions& options);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DeviceId id() const override { return DeviceId::cuda(ordinal_); }
  std::string name() const override { return name_; }
  const ModelConfig& config() const override { return config_; }
  const ParamLayout& layout() const override { return layout_; }

  float train_step(const CsrBatch& batch, float lr) override;
  float gradient(const CsrBatch& batch, float scale) override;
  void read_gradient(float* dst) override;
  void write_gradient(const float* src) override;
  void apply_update(float lr) override;
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override;
  void read_params(float* dst) override;
  void write_params(const float* src) override;
  void reset_optimizer() override;
  OptimizerState read_optimizer() override;
  void write_optimizer(const OptimizerState& state) override;
  void synchronize() override;

  /// GPU ordinal (for communicators).
  int gpu() const { return ordinal_; }
  /// Device pointers to the parameter and gradient buffers (layout().total() floats each).
  /// Valid for the device's lifetime; use them only on `stream()` or after synchronize().
  float* params_data() { return params_.data(); }
  float* grad_data() { return grad_.data(); }
  /// The compute stream: work queued here is ordered with the device's own kernels.
  cudaStream_t stream() const { return compute_; }
  /// Tells the device that its gradient buffer was overwritten behind its back (a device-side
  /// all-reduce): the next apply_update() finds the first layer's rows by scanning, exactly
  /// as after write_gradient().
  void mark_gradient_external() { grad_rows_all_ = true; }

 private:
  /// Device-side views of the current batch (32-bit offsets; see stage_batch()).
  struct Staged {
    index_t rows = 0, nnz = 0, label_nnz = 0;
    int* x_indptr = nullptr;
    col_t* x_cols = nullptr;
    float* x_vals = nullptr;
    int* row_of = nullptr;  ///< batch row of every nonzero (for the scatter)
    int* y_indptr = nullptr;
    col_t* y_idx = nullptr;
  };

  Staged stage_batch(const CsrBatch& batch);
  void forward(const Staged& b);
  /// Loss kernel on the logits; when `with_grad`, leaves `scale`/rows-scaled dloss/dlogits in
  /// the logits buffer. Returns the batch-mean loss (synchronises).
  float loss(const Staged& b, bool with_grad, float scale);
  /// Backward pass from the logits' gradient: dense layers' gradients into grad_, the first
  /// layer's gradient into the compact buffer gc_ (uniq_count_ rows of features uniq_).
  void backward(const Staged& b);
  /// Optimiser step: dense layers from grad_, the first layer lazily on `count` rows `rows`
  /// (gradient compact in gc_ when `compact`, else the dense rows of grad_).
  void update(float lr, const col_t* rows, index_t count, bool compact);
  void sync_compute();

  int ordinal_;
  std::string name_;
  ModelConfig config_;
  ParamLayout layout_;
  DeviceOptions options_;
  index_t h0_ = 0;      ///< width of the first hidden layer
  long long step_ = 0;  ///< optimiser steps taken (Adam bias correction)

  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  static constexpr int kSlots = 2;
  int slot_ = 0;
  cudaEvent_t copied_[kSlots] = {};  ///< upload of slot i finished
  cudaEvent_t used_[kSlots] = {};    ///< compute finished reading slot i
  PinnedBuffer host_stage_[kSlots];
  DeviceBuffer<unsigned char> dev_stage_[kSlots];

  DeviceBuffer<float> params_, grad_, state1_, state2_;
  std::vector<DeviceBuffer<float>> act_;  ///< post-ReLU output of every hidden layer
  DeviceBuffer<float> logits_;
  DeviceBuffer<float> delta_[2];  ///< ping-pong backprop buffers
  DeviceBuffer<float> ones_;      ///< column sums by GEMV
  DeviceBuffer<float> row_loss_;
  DeviceBuffer<unsigned char> spmm_buffer_;
  cusparseSpMMAlg_t spmm_alg_ = CUSPARSE_SPMM_CSR_ALG2;
  DeviceBuffer<col_t> uniq_, compact_, touched_;
  DeviceBuffer<col_t> grad_rows_;  ///< first-layer rows of grad_ set by the last gradient()
  index_t grad_rows_count_ = 0;
  bool grad_rows_all_ = false;  ///< after write_gradient(): any row may be nonzero
  index_t uniq_count_ = 0;
  DeviceBuffer<float> gc_;  ///< compact first-layer gradient, uniq_count_ x h0
  DeviceBuffer<float> topk_scores_;
  DeviceBuffer<col_t> topk_ids_;
  PinnedBuffer host_out_;
};

}  // namespace hetsgd::cuda
