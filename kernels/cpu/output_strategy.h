/// \file kernels/cpu/output_strategy.h
/// How a CpuDevice scores, trains and updates its output layer: one strategy object per
/// device, chosen at construction (make_output_strategy) from ModelConfig::output_layer and the
/// label count (kernels/README.md, CPU output layer):
///   * full block: L <= score_chunk, a batch's logits are one [rows x L] block that the dense
///     forward and backward of the device handle like any other layer;
///   * chunked: the full layer scored chunk by chunk (output_layer.h), no rows x L buffer;
///   * shortlist: training over each batch's candidates (shortlist.h) with a row-sparse
///     gradient and update under the shortlist's optimiser; prediction scores in chunks.
/// The device owns its parameters, gradient and optimiser state and passes them in; the
/// strategy owns the output layer's scratch and, for the shortlist, the labels its gradient
/// holds. Calls run inside the device's arena, from the device's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/types.h"

namespace hetsgd::cpu {

class Shortlist;

/// The replica's optimiser state, as an output-layer update sees it.
struct OutputUpdate {
  float lr = 0;
  std::int64_t step = 0;  ///< the step being taken (Adam's bias correction)
  float* params = nullptr;
  float* state1 = nullptr;  ///< null when unused
  float* state2 = nullptr;  ///< null when unused
  const float* grad = nullptr;
  bool compact = false;  ///< the gradient of the step's labels is in the workspace, packed
};

class OutputStrategy {
 public:
  virtual ~OutputStrategy() = default;

  /// The [rows x L] logits block the device's dense forward writes the output layer into
  /// (grown for `rows`), or null when the strategy scores the output layer itself and the
  /// dense forward stops below it.
  virtual float* block(index_t rows) { return nullptr; }
  /// Training loss and `scale` x its gradient. Block: dLoss/dlogits is left in the block for
  /// the device's dense backward. Others: the output layer's gradient goes to `grad` (chunked)
  /// or the workspace (shortlist), and dLoss/dH, masked by H > 0, to `dh`.
  virtual float loss_grad(const CsrBatch& batch, const float* h, const float* params, float* grad,
                          float scale, std::int64_t step, float* dh) = 0;
  /// Mean loss and the top-k labels of each row (prediction, evaluation).
  virtual float loss_topk(const CsrBatch& batch, const float* h, const float* params, int k,
                          col_t* labels, float* scores) = 0;

  /// True when the output layer is row-sparse (shortlist): outside the model optimiser's dense
  /// part, with its own update.
  virtual bool row_sparse() const { return false; }
  /// Labels whose rows the current step updates (row_sparse() only; empty otherwise).
  virtual const std::vector<col_t>& step_labels() const;
  /// The step's update of the output rows (row_sparse() only).
  virtual void update(const OutputUpdate& u) {}

  /// gradient() left this step's output gradient in the workspace: write it into `grad`.
  virtual void gradient_done(float* grad) {}
  /// The whole gradient buffer was written from outside (any label may be non-zero).
  virtual void gradient_replaced() {}
  /// Before apply_update(): the step's labels are those of the gradient buffer (scanned for
  /// non-zeros when it was replaced from outside).
  virtual void before_update(const float* grad) {}
  /// The labels `grad` may hold: false when any may (after gradient_replaced()).
  virtual bool gradient_labels(std::vector<col_t>* labels) const { return true; }
  /// Zeroes the labels `grad` may hold and forgets them; `labels` become the held ones (the
  /// caller writes their rows).
  virtual void replace_gradient_labels(float* grad, const std::vector<col_t>& labels) {}

  /// The shortlist (null unless row_sparse()).
  virtual Shortlist* shortlist() { return nullptr; }
  /// The largest scratch buffer held, in floats.
  virtual std::size_t largest_floats() const = 0;
};

/// The strategy `config` asks for, for a model of `layout`.
std::unique_ptr<OutputStrategy> make_output_strategy(const ModelConfig& config,
                                                     const ParamLayout& layout, int threads);

}  // namespace hetsgd::cpu
