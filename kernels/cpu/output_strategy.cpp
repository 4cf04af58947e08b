#include "kernels/cpu/output_strategy.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/output_layer.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/shortlist.h"
#include "kernels/cpu/topk.h"
#include "kernels/cpu/update.h"

namespace hetsgd::cpu {
namespace {

constexpr index_t kLabelsPerTask = 256;  // W_out rows (labels) per task when clearing/scattering

// The full layer with every logit of a batch in one block.
class BlockOutput final : public OutputStrategy {
 public:
  explicit BlockOutput(const ModelConfig& config) : config_(config) {}

  float* block(index_t rows) override {
    const auto n = static_cast<std::size_t>(rows * config_.num_labels);
    if (logits_.size() < n) logits_.resize(n);
    return logits_.data();
  }
  float loss_grad(const CsrBatch& batch, const float*, const float*, float*, float scale,
                  std::int64_t, float*) override {
    return loss_and_grad(batch, config_.num_labels, config_.loss, scale, logits_.data(), &row_loss_,
                         config_.label_smoothing);
  }
  float loss_topk(const CsrBatch& batch, const float*, const float*, int k, col_t* labels,
                  float* scores) override {
    const float loss =
        loss_only(batch, config_.num_labels, config_.loss, logits_.data(), &row_loss_);
    topk_rows(logits_.data(), batch.rows(), config_.num_labels, k, labels, scores);
    return loss;
  }
  std::size_t largest_floats() const override {
    return std::max(logits_.capacity(), row_loss_.capacity());
  }

 private:
  const ModelConfig& config_;
  std::vector<float> logits_;  // [rows x L]; overwritten by dLoss/dlogits
  std::vector<float> row_loss_;
};

// The full layer scored in chunks of labels.
class ChunkedOutput : public OutputStrategy {
 public:
  ChunkedOutput(const ModelConfig& config, const ParamLayout& layout)
      : config_(config), out_(layout.layers().back()) {}

  float loss_grad(const CsrBatch& batch, const float* h, const float* p, float* g, float scale,
                  std::int64_t, float* dh) override {
    return chunked_loss_grad(batch, h, out_.in, p + out_.w_offset, p + out_.b_offset, out_.out,
                             config_.loss, scale, config_.shortlist.score_chunk, g + out_.w_offset,
                             g + out_.b_offset, dh, &ws_);
  }
  float loss_topk(const CsrBatch& batch, const float* h, const float* p, int k, col_t* labels,
                  float* scores) override {
    return chunked_loss_topk(batch, h, out_.in, p + out_.w_offset, p + out_.b_offset, out_.out,
                             config_.loss, config_.shortlist.score_chunk, k, labels, scores, &ws_);
  }
  std::size_t largest_floats() const override { return ws_.largest_floats(); }

 protected:
  const ModelConfig& config_;
  const LayerSlice out_;
  OutputWorkspace ws_;
};

// Training over each batch's candidates; the output layer is row-sparse like W0.
class ShortlistOutput final : public ChunkedOutput {
 public:
  ShortlistOutput(const ModelConfig& config, const ParamLayout& layout, int threads)
      : ChunkedOutput(config, layout), shortlist_(std::make_unique<Shortlist>(config, threads)) {}

  float loss_grad(const CsrBatch& batch, const float* h, const float* p, float*, float scale,
                  std::int64_t step, float* dh) override {
    shortlist_->refresh(step, p + out_.w_offset, p + out_.b_offset, batch);
    const CandidateSet& cand = shortlist_->select(batch, h, step);
    const float loss = shortlist_loss_grad(batch, h, out_.in, p + out_.w_offset, p + out_.b_offset,
                                           out_.out, config_.loss, scale, cand, dh, &ws_);
    ids_ = cand.ids;
    return loss;
  }
  bool row_sparse() const override { return true; }
  const std::vector<col_t>& step_labels() const override { return ids_; }

  void update(const OutputUpdate& u) override {
    // Only the step's candidates' rows, with the shortlist's own optimiser.
    OptimizerConfig oc = config_.optimizer;
    oc.kind = config_.shortlist.optimizer;
    if (oc.kind == OptimizerKind::kSgd) oc.momentum = 0.0f;
    const StepRule so = make_step_rule(oc, u.lr * config_.shortlist.lr_scale, u.step);
    const auto nc = static_cast<index_t>(ids_.size());
    const float* gw = u.compact ? ws_.dw.data() : u.grad + out_.w_offset;
    const float* gb = u.compact ? ws_.db.data() : u.grad + out_.b_offset;
    auto at = [](float* base, index_t off) { return base ? base + off : nullptr; };
    update_rows(so, ids_.data(), nc, out_.in, u.params + out_.w_offset, at(u.state1, out_.w_offset),
                at(u.state2, out_.w_offset), gw, u.compact, config_.optimizer.weight_decay);
    update_rows(so, ids_.data(), nc, 1, u.params + out_.b_offset, at(u.state1, out_.b_offset),
                at(u.state2, out_.b_offset), gb, u.compact, 0.0f);
  }

  void gradient_done(float* grad) override {
    // Like W0's rows: clear the labels the previous gradient left, then write this batch's.
    clear(grad);
    float* gw = grad + out_.w_offset;
    float* gb = grad + out_.b_offset;
    const auto nc = static_cast<index_t>(ids_.size());
    for_blocks(nc, kLabelsPerTask, [&](index_t c0, index_t c1) {
      for (index_t c = c0; c < c1; ++c) {
        const auto j = static_cast<index_t>(ids_[c]);
        std::memcpy(gw + j * out_.in, ws_.dw.data() + c * out_.in, sizeof(float) * out_.in);
        gb[j] = ws_.db[c];
      }
    });
    grad_ids_ = ids_;
  }
  void gradient_replaced() override { grad_all_ = true; }
  void before_update(const float* grad) override {
    if (!grad_all_) {
      ids_ = grad_ids_;
      return;
    }
    // A gradient from outside: its labels are those with any non-zero entry.
    const float* gw = grad + out_.w_offset;
    const float* gb = grad + out_.b_offset;
    ids_.clear();
    for (index_t j = 0; j < out_.out; ++j) {
      const float* row = gw + j * out_.in;
      bool hit = gb[j] != 0.0f;
      for (index_t i = 0; i < out_.in && !hit; ++i) hit = row[i] != 0.0f;
      if (hit) ids_.push_back(static_cast<col_t>(j));
    }
    grad_ids_ = ids_;
    grad_all_ = false;
  }
  bool gradient_labels(std::vector<col_t>* labels) const override {
    if (grad_all_) return false;
    *labels = grad_ids_;
    return true;
  }
  void replace_gradient_labels(float* grad, const std::vector<col_t>& labels) override {
    clear(grad);
    grad_ids_ = labels;
  }
  Shortlist* shortlist() override { return shortlist_.get(); }

 private:
  // Zeroes the labels the gradient may hold (grad_ids_, or all of them) and forgets them.
  void clear(float* grad) {
    float* gw = grad + out_.w_offset;
    float* gb = grad + out_.b_offset;
    if (grad_all_) {
      std::fill(gw, gw + out_.in * out_.out, 0.0f);
      std::fill(gb, gb + out_.out, 0.0f);
    } else {
      const auto n = static_cast<index_t>(grad_ids_.size());
      for_blocks(n, kLabelsPerTask, [&](index_t c0, index_t c1) {
        for (index_t c = c0; c < c1; ++c) {
          const auto j = static_cast<index_t>(grad_ids_[c]);
          std::memset(gw + j * out_.in, 0, sizeof(float) * out_.in);
          gb[j] = 0.0f;
        }
      });
    }
    grad_ids_.clear();
    grad_all_ = false;
  }

  std::unique_ptr<Shortlist> shortlist_;
  std::vector<col_t> ids_;       // output labels of the current step
  std::vector<col_t> grad_ids_;  // output labels the gradient buffer may hold
  bool grad_all_ = false;        // after gradient_replaced(): any label may be non-zero
};

}  // namespace

const std::vector<col_t>& OutputStrategy::step_labels() const {
  static const std::vector<col_t> none;
  return none;
}

std::unique_ptr<OutputStrategy> make_output_strategy(const ModelConfig& config,
                                                     const ParamLayout& layout, int threads) {
  if (!config.uses_shortlist() && config.num_labels <= config.shortlist.score_chunk) {
    return std::make_unique<BlockOutput>(config);
  }
  HETSGD_CHECK(config.label_smoothing == 0.0f,
               "label smoothing needs every label scored in one block (full output layer, "
               "num_labels "
                   << config.num_labels << " <= score chunk " << config.shortlist.score_chunk
                   << ")");
  if (config.uses_shortlist()) return std::make_unique<ShortlistOutput>(config, layout, threads);
  return std::make_unique<ChunkedOutput>(config, layout);
}

}  // namespace hetsgd::cpu
