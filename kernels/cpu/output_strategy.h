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
/// strategy owns the output layer's scratch. Calls run inside the device's arena, from the
/// device's thread.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/types.h"

namespace hetsgd::cpu {

class ShortlistOutput;
class SparseRows;

/// What every output layer means: scoring for training and for prediction. The shortlist's
/// row-sparse gradient and update are ShortlistOutput's own calls (shortlist_output.h),
/// reached through shortlist().
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
  /// The largest scratch buffer held, in floats.
  virtual std::size_t largest_floats() const = 0;

  /// The shortlisted layer, whose output rows are row-sparse with their own update; null for
  /// the full layer (block or chunked), which the model optimiser updates as a dense layer.
  virtual ShortlistOutput* shortlist() { return nullptr; }
};

/// The strategy `config` asks for, for a model of `layout`; a shortlist keeps its labels in
/// `rows`. `config`, `layout` and `rows` must outlive it.
std::unique_ptr<OutputStrategy> make_output_strategy(const ModelConfig& config,
                                                     const ParamLayout& layout, int threads,
                                                     SparseRows& rows);

}  // namespace hetsgd::cpu
