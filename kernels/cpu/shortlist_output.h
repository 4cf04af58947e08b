/// \file kernels/cpu/shortlist_output.h
/// ShortlistOutput: the shortlisted output layer of a CpuDevice (an OutputStrategy). Training
/// scores only each batch's candidates (Shortlist), and the output layer's gradient and
/// update are row-sparse like W0's: gradient_done() scatters the candidates' rows of W_out
/// (stored by label) into the gradient buffer, update() changes only the step's rows and
/// entries of b_out, with the shortlist's optimiser (lazy Adam by default, or plain SGD) at
/// lr x shortlist.lr_scale. Prediction scores every label in chunks (output_layer.h).
///
/// The labels of the step and of the gradient buffer are the replica's SparseRows, which the
/// device and its row exchange share. These calls are the device's only; the rest of the
/// device sees the OutputStrategy interface. Calls run inside the device's arena.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cpu/output_layer.h"
#include "kernels/cpu/output_strategy.h"
#include "kernels/cpu/shortlist.h"
#include "kernels/cpu/sparse_rows.h"

namespace hetsgd::cpu {

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

class ShortlistOutput final : public OutputStrategy {
 public:
  /// For `config`'s model of `layout`; `rows` (the device's, which outlives this, like
  /// `config` and `layout`) gets the
  /// step's labels and the gradient's labels.
  ShortlistOutput(const ModelConfig& config, const ParamLayout& layout, int threads,
                  SparseRows& rows);

  float loss_grad(const CsrBatch& batch, const float* h, const float* params, float* grad,
                  float scale, std::int64_t step, float* dh) override;
  float loss_topk(const CsrBatch& batch, const float* h, const float* params, int k, col_t* labels,
                  float* scores) override;
  std::size_t largest_floats() const override { return ws_.largest_floats(); }
  ShortlistOutput* shortlist() override { return this; }

  /// The candidate selector and its label index.
  Shortlist& selector() { return *selector_; }
  /// The step's update of the output rows of the step's labels.
  void update(const OutputUpdate& u);
  /// gradient() left this step's output gradient in the workspace: clears the labels the
  /// gradient buffer `grad` held and writes the step's there.
  void gradient_done(float* grad);
  /// Before apply_update(): the step's labels become those of the gradient buffer (scanned
  /// for non-zeros when it was written from outside).
  void before_update(const float* grad);

 private:
  const ModelConfig& config_;
  const ParamLayout& layout_;
  const LayerSlice out_;
  OutputWorkspace ws_;
  SparseRows& rows_;
  std::unique_ptr<Shortlist> selector_;
};

}  // namespace hetsgd::cpu
