/// \file kernels/cuda/cuda_device.cuh
/// CudaDevice: one model replica in the memory of one GPU (nvcc-only header).
///
/// Parameters, gradient and optimiser state are device buffers in the ParamLayout order, so a
/// communicator merges replicas with single calls on raw pointers. Several CudaDevices may
/// share one GPU (virtual devices): each has its own stream and handles, allocates its scratch
/// stream-ordered (cudaMallocAsync) and only ever synchronises its own stream, so two virtual
/// devices driven from two threads do not wait for each other.
///
/// Stream: every copy, kernel, cuBLAS and cuSPARSE call of the device runs on one non-blocking
/// stream, `stream()`, in program order; the batch is packed into pinned memory and uploaded on
/// that stream. Each public call synchronises the stream once, at its end, when its results are
/// in host memory; row counts of the sparse layer stay on the GPU, so a training step never
/// waits for the GPU half-way.
///
/// Evaluation and prediction (predict_topk) score the labels in chunks with a running top-k and
/// a streaming log-sum-exp: no batch x L buffer is kept for them. Training keeps one batch x L
/// logits buffer (the full softmax's gradient needs every logit).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <string>
#include <vector>

#include "core/device.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/sparse.cuh"

namespace hetsgd::cuda {

namespace detail {
/// Elements to reserve for `n`: at least one, so an empty batch still gets valid pointers.
inline size_t at_least_one(index_t n) { return static_cast<size_t>(n > 0 ? n : 1); }
}  // namespace detail

/// The hook for the output-layer strategy: true when `config` asks for the shortlisted output
/// layer, which CudaDevice refuses (it is CPU-only). It returns false until ModelConfig holds
/// the output-layer choice; wiring it is one line in cuda_device.cu.
bool config_requests_shortlist(const ModelConfig& config);

/// A Device on GPU `ordinal` (see core/device.h for the operations' contracts).
class CudaDevice final : public Device {
 public:
  /// Allocates and initialises the replica from `config.seed`. Throws DeviceUnavailable when
  /// the GPU does not exist, InvalidArgument for the shortlisted output layer (CPU-only),
  /// MemoryBudgetExceeded when the replica's estimate (api.h) exceeds the GPU's free memory,
  /// CudaError on allocation failure; whatever was created is released before it throws.
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
  void apply_update(float lr) override;
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override;
  float score_all(const CsrBatch& batch, float* scores) override;
  void read(Buffer which, float* dst) override {
    which == Buffer::kParams ? read_params(dst) : read_gradient(dst);
  }
  void write(Buffer which, const float* src) override {
    which == Buffer::kParams ? write_params(src) : write_gradient(src);
  }
  void read_gradient(float* dst);
  void write_gradient(const float* src);
  void read_params(float* dst);
  void write_params(const float* src);
  void reset_optimizer() override;
  OptimizerStream stream_optimizer() override { return stream_of(read_optimizer()); }
  OptimizerState read_optimizer();
  void write_optimizer(const OptimizerState& state) override;
  void synchronize() override;

  /// GPU ordinal (for communicators).
  int gpu() const { return ordinal_; }
  /// Device pointers to the parameter and gradient buffers (layout().total() floats each).
  /// Valid for the device's lifetime; use them only on `stream()` or after synchronize().
  float* params_data() { return params_.data(); }
  float* grad_data() { return grad_.data(); }
  /// The device's stream: work queued here is ordered with the device's own kernels.
  cudaStream_t stream() const { return stream_; }
  /// Tells the device that its gradient buffer was overwritten behind its back (a device-side
  /// all-reduce): the next apply_update() finds the first layer's rows by scanning, exactly
  /// as after write_gradient().
  void mark_gradient_external() { grad_rows_all_ = true; }
  /// Labels scored per chunk by predict_topk (0 = automatic: as many as keep the chunk's
  /// logits under kScoreBudget floats). For tests of the chunking.
  void set_score_chunk(index_t labels) { score_chunk_ = labels; }
  /// Floats of logits an evaluation chunk may hold (64 MiB).
  static constexpr index_t kScoreBudget = kScoreBudgetFloats;

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
  /// Slots of counts_: row counts that stay on the GPU.
  enum Count { kUniqCount = 0, kGradRowsCount = 1, kTouchedCount = 2, kCounts = 3 };

  /// Throws MemoryBudgetExceeded when estimate_replica_bytes() exceeds the GPU's free memory.
  void check_free_memory();
  void create(const DeviceOptions& options);
  void release() noexcept;
  Staged stage_batch(const CsrBatch& batch);
  /// The batch a training step stages: `batch` itself, or its copy after input dropout.
  const CsrBatch& training_input(const CsrBatch& batch);
  /// Hidden layers: act_ for every hidden layer (the input of the output layer is act_.back()).
  /// With `train`, each hidden output gets the step's dropout mask (ModelConfig::dropout).
  void forward_hidden(const Staged& b, bool train = false);
  /// Output layer over all labels into logits_ (training); for the softmax loss without the
  /// bias, which loss() adds on the fly.
  void forward_output(const Staged& b);
  /// Loss kernel on the logits; when `with_grad`, leaves `scale`/rows-scaled dloss/dlogits in
  /// the logits buffer. Queues the per-row losses' copy to host_out_ (read by mean_loss()).
  void loss(const Staged& b, bool with_grad, float scale);
  /// The batch-mean loss from host_out_, after the stream has been synchronised.
  float mean_loss(index_t rows) const;
  /// A scoring pass's batch on the device, its hidden layers run, and the labels per chunk.
  struct ScoringPass {
    Staged b;
    index_t chunk = 0;
  };
  /// Start of a scoring pass (predict_topk, score_all): stages `batch`, runs its hidden layers
  /// and reserves the logits and loss-state buffers for chunks of ScoringPass::chunk labels.
  ScoringPass begin_scoring(const CsrBatch& batch);
  /// Output layer (weights and bias) on labels [c0, c0 + width) of `rows` rows into logits_.
  void chunk_logits(index_t rows, index_t c0, index_t width);
  /// Backward pass from the logits' gradient: dense layers' gradients into grad_, the first
  /// layer's gradient into the compact buffer gc_ (counts_[kUniqCount] rows of features uniq_).
  void backward(const Staged& b);
  /// Optimiser step: dense layers from grad_, the first layer lazily on rows `rows` (device
  /// count `count`, at most `capacity`; gradient compact in gc_ when `compact`, else the dense
  /// rows of grad_).
  void update(float lr, const col_t* rows, const int* count, index_t capacity, bool compact);
  void sync();

  int ordinal_;
  std::string name_;
  ModelConfig config_;
  ParamLayout layout_;
  index_t h0_ = 0;      ///< width of the first hidden layer
  CsrBatch dropped_;    ///< training batch after input dropout (ModelConfig::input_dropout)
  long long step_ = 0;  ///< optimiser steps taken (Adam bias correction)
  index_t score_chunk_ = 0;

  cudaStream_t stream_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  PinnedBuffer host_stage_;
  DeviceBuffer<unsigned char> dev_stage_;

  DeviceBuffer<float> params_, grad_, state1_, state2_;
  std::vector<DeviceBuffer<float>> act_;  ///< post-ReLU output of every hidden layer
  DeviceBuffer<float> logits_;            ///< rows x L (training) or rows x chunk (scoring)
  DeviceBuffer<float> delta_[2];          ///< ping-pong backprop buffers
  DeviceBuffer<float> ones_;              ///< column sums by GEMV
  index_t ones_filled_ = 0;
  DeviceBuffer<float> row_loss_;
  detail::SparseScratch sparse_;
  detail::SoftmaxScratch softmax_;
  DeviceBuffer<int> counts_;
  DeviceBuffer<col_t> uniq_, compact_, touched_;
  DeviceBuffer<col_t> grad_rows_;  ///< first-layer rows of grad_ set by the last gradient()
  index_t grad_rows_capacity_ = 0;
  bool grad_rows_all_ = false;  ///< after write_gradient(): any row may be nonzero
  index_t uniq_capacity_ = 0;   ///< nnz of the last batch: bound of counts_[kUniqCount]
  DeviceBuffer<float> gc_;      ///< compact first-layer gradient, uniq_capacity_ x h0
  DeviceBuffer<detail::ScoreState> score_state_;
  DeviceBuffer<float> topk_scores_;
  DeviceBuffer<col_t> topk_ids_;
  PinnedBuffer host_out_;
};

}  // namespace hetsgd::cuda
