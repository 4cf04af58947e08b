#include "kernels/cpu/shortlist_output.h"

#include <cstring>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/update.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kLabelsPerTask = 256;  // W_out rows (labels) scattered per task
}  // namespace

ShortlistOutput::ShortlistOutput(const ModelConfig& config, const ParamLayout& layout, int threads,
                                 SparseRows& rows)
    : config_(config),
      layout_(layout),
      out_(layout.layers().back()),
      rows_(rows),
      selector_(std::make_unique<Shortlist>(config, threads)) {}

float ShortlistOutput::loss_grad(const CsrBatch& batch, const float* h, const float* p, float*,
                                 float scale, std::int64_t step, float* dh) {
  selector_->refresh(step, p + out_.w_offset, p + out_.b_offset, batch);
  const CandidateSet& cand = selector_->select(batch, h, step);
  const float loss = shortlist_loss_grad(batch, h, out_.in, p + out_.w_offset, p + out_.b_offset,
                                         out_.out, config_.loss, scale, cand, dh, &ws_);
  rows_.step_labels() = cand.ids;
  return loss;
}

float ShortlistOutput::loss_topk(const CsrBatch& batch, const float* h, const float* p, int k,
                                 col_t* labels, float* scores) {
  return chunked_loss_topk(batch, h, out_.in, p + out_.w_offset, p + out_.b_offset, out_.out,
                           config_.loss, config_.shortlist.score_chunk, k, labels, scores, &ws_);
}

void ShortlistOutput::update(const OutputUpdate& u) {
  // Only the step's candidates' rows, with the shortlist's own optimiser.
  OptimizerConfig oc = config_.optimizer;
  oc.kind = config_.shortlist.optimizer;
  if (oc.kind == OptimizerKind::kSgd) oc.momentum = 0.0f;
  const StepRule so = make_step_rule(oc, u.lr * config_.shortlist.lr_scale, u.step);
  const std::vector<col_t>& ids = rows_.step_labels();
  const auto nc = static_cast<index_t>(ids.size());
  const float* gw = u.compact ? ws_.dw.data() : u.grad + out_.w_offset;
  const float* gb = u.compact ? ws_.db.data() : u.grad + out_.b_offset;
  auto at = [](float* base, index_t off) { return base ? base + off : nullptr; };
  update_rows(so, ids.data(), nc, out_.in, u.params + out_.w_offset, at(u.state1, out_.w_offset),
              at(u.state2, out_.w_offset), gw, u.compact, config_.optimizer.weight_decay);
  update_rows(so, ids.data(), nc, 1, u.params + out_.b_offset, at(u.state1, out_.b_offset),
              at(u.state2, out_.b_offset), gb, u.compact, 0.0f);
}

void ShortlistOutput::gradient_done(float* grad) {
  // Like W0's rows: clear the labels the previous gradient left, then write this batch's.
  rows_.clear_gradient_labels(layout_, grad);
  float* gw = grad + out_.w_offset;
  float* gb = grad + out_.b_offset;
  const std::vector<col_t>& ids = rows_.step_labels();
  const auto nc = static_cast<index_t>(ids.size());
  for_blocks(nc, kLabelsPerTask, [&](index_t c0, index_t c1) {
    for (index_t c = c0; c < c1; ++c) {
      const auto j = static_cast<index_t>(ids[c]);
      std::memcpy(gw + j * out_.in, ws_.dw.data() + c * out_.in, sizeof(float) * out_.in);
      gb[j] = ws_.db[c];
    }
  });
  rows_.gradient_labels().ids = ids;
}

void ShortlistOutput::before_update(const float* grad) {
  RowList& held = rows_.gradient_labels();
  std::vector<col_t>& ids = rows_.step_labels();
  if (!held.all) {
    ids = held.ids;
    return;
  }
  // A gradient from outside: its labels are those with any non-zero entry.
  const float* gw = grad + out_.w_offset;
  const float* gb = grad + out_.b_offset;
  ids.clear();
  for (index_t j = 0; j < out_.out; ++j) {
    const float* row = gw + j * out_.in;
    bool hit = gb[j] != 0.0f;
    for (index_t i = 0; i < out_.in && !hit; ++i) hit = row[i] != 0.0f;
    if (hit) ids.push_back(static_cast<col_t>(j));
  }
  held.ids = ids;
  held.all = false;
}

}  // namespace hetsgd::cpu
