/// \file kernels/cpu/cpu_device.h
/// CpuDevice: one model replica in host memory, trained with oneTBB and single-threaded BLAS.
///
/// Internal to the CPU backend; other code makes one through cpu::make_device() (api.h) or
/// the registry. Every compute call runs inside the device's own tbb::task_arena, so several
/// CPU devices in one process each use their own threads. Buffers are sized on the first batch
/// of a given size and reused, so steady-state steps do not allocate.
///
/// Numerics: every output element is computed by one task in a fixed order (see parallel.h),
/// so results do not depend on the thread count, and the same seed and batch sequence give
/// bit-identical parameters.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tbb/task_arena.h>

#include "core/device.h"
#include "kernels/cpu/approx_scorer.h"
#include "kernels/cpu/cpu_row_exchange.h"
#include "kernels/cpu/output_strategy.h"
#include "kernels/cpu/shortlist.h"
#include "kernels/cpu/sparse.h"
#include "kernels/cpu/sparse_rows.h"
#include "kernels/cpu/versioned_params.h"
#include "kernels/cpu/zeroed_buffer.h"

namespace hetsgd::cpu {

/// The CPU implementation of Device (see core/device.h for the contract of each call).
///
/// Sparse first layer: train_step() and gradient() compute dW0 only on rows of features
/// present in the batch. gradient() scatters them into the dense gradient buffer (zeroing the
/// rows the previous call left there, so no full clear is needed); apply_update() updates the
/// rows the last gradient() touched, or, after write_gradient(), every row with a non-zero
/// gradient. Optimiser state on those rows is updated lazily (untouched rows keep theirs);
/// Adam's bias correction uses the global step count. The gradient buffer reflects the last
/// gradient() / write_gradient(); train_step() leaves its W0 part unspecified.
///
/// Output layer (ModelConfig::output_layer, an OutputStrategy): with the full layer and
/// L <= score_chunk the logits of a batch are one [rows x L] block (the original fast path);
/// above score_chunk the labels are scored in chunks (output_layer.h), so no buffer holds
/// rows x L floats in training, evaluation or prediction. With the shortlist
/// (shortlist_output.h), training scores only each batch's candidates and the output layer's
/// gradient and update are row-sparse like W0's. Prediction always scores every label.
///
/// The parts: the parameters (VersionedParams: every write bumps their version), the gradient
/// buffer and the optimiser state; the row bookkeeping (SparseRows) shared with the
/// shortlisted output layer and the row exchange (CpuRowExchange); the approximate top-k
/// (ApproxScorer), whose caches follow the parameters' version.
class CpuDevice final : public Device {
 public:
  /// `threads` = 0 uses every hardware thread. Parameters start from init_params(config.seed).
  /// `stop` (optional) abandons the construction when set: the buffers are made resident in
  /// blocks with it read between them, and the constructor throws Error "...: interrupted".
  /// `prefault_optimizer` false leaves the optimiser state unwritten (DeviceOptions::
  /// scoring_only): a device that only scores never touches it.
  CpuDevice(int ordinal, const ModelConfig& config, int threads,
            const std::atomic<bool>* stop = nullptr, bool prefault_optimizer = true);

  DeviceId id() const override { return DeviceId::cpu(ordinal_); }
  std::string name() const override;
  const ModelConfig& config() const override { return config_; }
  const ParamLayout& layout() const override { return layout_; }

  float train_step(const CsrBatch& batch, float lr) override;
  float gradient(const CsrBatch& batch, float scale) override;
  void apply_update(float lr) override;
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override;
  float score_all(const CsrBatch& batch, float* scores) override;
  void read(Buffer which, float* dst) override;
  void write(Buffer which, const float* src) override;
  void reset_optimizer() override;
  /// Gives the gradient's and the optimiser state's written pages back (fresh zero pages).
  void release_training_state() override;
  OptimizerStream stream_optimizer() override;
  void write_optimizer(const OptimizerState& state) override;
  /// Row-sparse merges and all-reduces (cpu_row_exchange.h): the touched set is the W0 rows
  /// and (when shortlisted) output labels that optimizer steps updated since clear_touched().
  RowExchange* row_exchange() override { return &exchange_; }

  /// Threads of this device's arena.
  int threads() const { return threads_; }

  /// True when training uses the shortlisted output layer.
  bool shortlisted() const { return rows_.output_rows(); }
  /// Labels whose output row (W_out[j, :] and b_out[j]) the last train_step() or gradient()
  /// changed or wrote, ascending; only meaningful when shortlisted() (the full layer touches
  /// every label). For row-sparse merges of the output layer.
  const std::vector<col_t>& touched_labels() const { return rows_.step_labels(); }
  /// The shortlist's candidate selector (null unless shortlisted()).
  Shortlist* shortlist();
  /// Approximate top-k with the label index (`hetsgd predict --ann`, ApproxScorer): the index
  /// over the output layer is built on the first call and again after any change of the
  /// parameters; each row's `k` nearest labels are rescored exactly and sorted like
  /// predict_topk(). Returns 0 (no loss: not every label is scored).
  float predict_topk_ann(const CsrBatch& batch, int k, col_t* labels, float* scores);
  /// Approximate top-k for evaluating a model too large to score exactly (ApproxScorer): each
  /// row's top k among the `head` labels of largest bias (the label prior the model learned)
  /// and the labels of its `probes` best LabelClusters, all scored exactly with the current
  /// weights. The clusters and the head are built from the current weights on the first call
  /// and again after any change of the parameters; building the clusters releases a
  /// shortlist's training index. Returns true.
  bool predict_topk_clustered(const CsrBatch& batch, int k, index_t head, int probes, col_t* labels,
                              float* scores);
  /// Test hook: the largest per-batch scratch buffer this device has allocated, in floats
  /// (activations, logits, gradients of the batch, output-layer workspace). Parameters,
  /// gradient and optimiser state are not scratch.
  std::size_t largest_scratch_floats() const;

 private:
  /// Sizes the activation buffers for `rows` rows (grows only).
  void reserve_rows(index_t rows);
  /// Forward pass; leaves activations in scratch_.acts, and logits in the output strategy's
  /// block when it has one. With `train`, every hidden layer's output gets the step's dropout
  /// mask (ModelConfig::dropout).
  void forward(const CsrBatch& batch, bool train = false);
  /// Forward + backward at scale `scale`: dense gradients into grad_, the compact dW0 into
  /// scratch_.dw0 (rows scratch_.features.unique()). Returns the mean loss.
  float forward_backward(const CsrBatch& batch, float scale);
  /// One optimiser step (increments moments_.step): sparse rows `rows[0..n)` whose gradient row i
  /// is at `g0 + (compact ? i : rows[i]) * hidden`, then every dense parameter from grad_. When
  /// shortlisted, the shortlist updates the output layer on the step's labels only, from its
  /// workspace when `out_compact`, else from grad_.
  void optimizer_step(const col_t* rows, index_t n, const float* g0, bool compact, float lr,
                      bool out_compact);
  void check_batch(const CsrBatch& batch) const;
  /// Writes zeros over the optimiser state the optimiser will update (see the .cpp).
  void prefault_state(const std::atomic<bool>* stop = nullptr);

  // The optimiser's state: zero-page buffers, so rows it never touches are never resident.
  struct Moments {
    ZeroedFloats first;     ///< momentum velocity or Adam first moment (empty if unused)
    ZeroedFloats second;    ///< Adam second moment (empty if unused)
    std::int64_t step = 0;  ///< optimiser steps since construction / reset_optimizer()
  };
  // The batch's buffers, sized on the first batch of a given size and reused.
  struct Scratch {
    CsrBatch dropped;  ///< the training batch after input dropout (ModelConfig::input_dropout)
    BatchFeatures features;
    std::vector<std::vector<float>> acts;    ///< post-ReLU output of each hidden layer
    std::vector<std::vector<float>> deltas;  ///< gradient w.r.t. each hidden layer's output
    std::vector<float> dw0;                  ///< compact dW0, [U x hidden0]
    std::vector<col_t> scan_rows;            ///< non-zero rows found by apply_update()
    std::vector<float> row_loss;             ///< score_all()'s per-row losses
  };

  int ordinal_;
  ModelConfig config_;
  ParamLayout layout_;
  int threads_;
  tbb::task_arena arena_;
  VersionedParams params_;  // made resident block by block (prefault_zeros), then init_params()
  ZeroedFloats grad_;       ///< zero-page, like the moments
  Moments moments_;
  Scratch scratch_;
  SparseRows rows_;                         ///< the gradient's, the step's and the touched rows
  std::unique_ptr<OutputStrategy> output_;  ///< full block, chunked or shortlist
  ApproxScorer scorer_;                     ///< predict_topk_ann() and predict_topk_clustered()
  CpuRowExchange exchange_{*this, arena_, params_, grad_, rows_};
};

}  // namespace hetsgd::cpu
