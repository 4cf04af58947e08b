#include "kernels/cpu/output_strategy.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/output_layer.h"
#include "kernels/cpu/shortlist_output.h"
#include "kernels/cpu/topk.h"

namespace hetsgd::cpu {
namespace {

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
class ChunkedOutput final : public OutputStrategy {
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

 private:
  const ModelConfig& config_;
  const LayerSlice out_;
  OutputWorkspace ws_;
};

}  // namespace

std::unique_ptr<OutputStrategy> make_output_strategy(const ModelConfig& config,
                                                     const ParamLayout& layout, int threads,
                                                     SparseRows& rows) {
  if (!config.uses_shortlist() && config.num_labels <= config.shortlist.score_chunk) {
    return std::make_unique<BlockOutput>(config);
  }
  HETSGD_CHECK(config.label_smoothing == 0.0f,
               "label smoothing needs every label scored in one block (full output layer, "
               "num_labels "
                   << config.num_labels << " <= score chunk " << config.shortlist.score_chunk
                   << ")");
  if (config.uses_shortlist()) {
    return std::make_unique<ShortlistOutput>(config, layout, threads, rows);
  }
  return std::make_unique<ChunkedOutput>(config, layout);
}

}  // namespace hetsgd::cpu
