#include "kernels/cpu/cpu_device.h"

#include <math.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/math/dropout.h"
#include "core/math/input_dropout.h"
#include "kernels/cpu/api.h"
#include "kernels/cpu/dense.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/topk.h"
#include "kernels/cpu/update.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowsPerTask = 64;  // W0 gradient rows scattered per task

int resolve_threads(int threads) {
  HETSGD_CHECK(threads >= 0, "cpu threads " << threads << " < 0");
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

CpuDevice::CpuDevice(int ordinal, const ModelConfig& config, int threads)
    : ordinal_(ordinal),
      config_(config),
      layout_(config),
      threads_(resolve_threads(threads)),
      arena_(threads_) {
  HETSGD_CHECK(ordinal >= 0, "cpu ordinal " << ordinal << " < 0");
  ensure_single_threaded_blas();
  const auto total = static_cast<size_t>(layout_.total());
  params_.resize(total);
  init_params(layout_, config_.seed, params_.data());
  grad_ = zeros(total);
  const OptimizerConfig& opt = config_.optimizer;
  const bool short_list = config_.uses_shortlist();
  const bool out_adam = short_list && config_.shortlist.optimizer == OptimizerKind::kAdam;
  if (opt.kind == OptimizerKind::kAdam || opt.momentum != 0.0f || out_adam) {
    state1_ = zeros(total);
  }
  if (opt.kind == OptimizerKind::kAdam || out_adam) state2_ = zeros(total);
  prefault_state();
  full_logits_ = !short_list && config_.num_labels <= config_.shortlist.score_chunk;
  if (short_list) shortlist_ = std::make_unique<Shortlist>(config_);
  HETSGD_CHECK(config_.label_smoothing == 0.0f || full_logits_,
               "label smoothing needs every label scored in one block (full output layer, "
               "num_labels "
                   << config_.num_labels << " <= score chunk " << config_.shortlist.score_chunk
                   << ")");
  features_.reset(config_.num_features);
  acts_.resize(config_.hidden.size());
  deltas_.resize(config_.hidden.size());
}

std::string CpuDevice::name() const {
  return "cpu:" + std::to_string(ordinal_) + " (" + std::to_string(threads_) + " threads)";
}

void CpuDevice::check_batch(const CsrBatch& batch) const {
  HETSGD_CHECK(batch.x_indptr.size() == batch.y_indptr.size(),
               "batch has " << batch.x_indptr.size() - 1 << " feature rows but "
                            << batch.y_indptr.size() - 1 << " label rows");
  HETSGD_CHECK(!batch.x_indptr.empty() && batch.x_indptr.back() == batch.nnz(),
               "batch feature offsets end at "
                   << (batch.x_indptr.empty() ? -1 : batch.x_indptr.back()) << " but "
                   << batch.nnz() << " values are stored");
  HETSGD_CHECK(batch.y_indptr.back() == batch.label_nnz(),
               "batch label offsets end at " << batch.y_indptr.back() << " but "
                                             << batch.label_nnz() << " labels are stored");
}

void CpuDevice::reserve_rows(index_t rows) {
  const std::vector<LayerSlice>& ls = layout_.layers();
  for (size_t l = 0; l < acts_.size(); ++l) {
    const auto n = static_cast<size_t>(rows * ls[l].out);
    if (acts_[l].size() < n) {
      acts_[l].resize(n);
      deltas_[l].resize(n);
    }
  }
  if (!full_logits_) return;
  const auto n = static_cast<size_t>(rows * config_.num_labels);
  if (logits_.size() < n) logits_.resize(n);
}

void CpuDevice::forward(const CsrBatch& batch, bool train) {
  check_batch(batch);
  const index_t rows = batch.rows();
  reserve_rows(rows);
  const std::vector<LayerSlice>& ls = layout_.layers();
  const float* p = params_.data();
  const bool drop = train && config_.dropout > 0.0f;
  // Each hidden layer's output is dropped before the next layer reads it; the mask is fixed by
  // (seed, ordinal, step, layer), so gradient() twice at one step sees the same mask.
  const auto dropout = [&](size_t l) {
    const std::uint64_t stream =
        math::dropout_stream(config_.seed, ordinal_, step_, static_cast<int>(l));
    dropout_forward(acts_[l].data(), rows, ls[l].out, config_.dropout, stream);
  };
  sparse_forward(batch, p + ls[0].w_offset, p + ls[0].b_offset, ls[0].out, acts_[0].data());
  if (drop) dropout(0);
  const size_t hidden = acts_.size();
  for (size_t l = 1; l < ls.size(); ++l) {
    const bool is_output = l == hidden;
    if (is_output && !full_logits_) break;  // scored in chunks or over candidates
    (ls[l].by_output ? dense_forward_t : dense_forward)(
        acts_[l - 1].data(), rows, ls[l].in, ls[l].out, p + ls[l].w_offset, p + ls[l].b_offset,
        !is_output, is_output ? logits_.data() : acts_[l].data());
    if (drop && !is_output) dropout(l);
  }
}

float CpuDevice::forward_backward(const CsrBatch& in, float scale) {
  const bool drop_in = config_.input_dropout > 0.0f;
  if (drop_in) {
    math::drop_input_features(
        in, config_.input_dropout,
        math::dropout_stream(config_.seed, ordinal_, step_, math::kInputDropoutLayer), &dropped_);
  }
  const CsrBatch& batch = drop_in ? dropped_ : in;
  forward(batch, true);
  features_.build(batch);
  const index_t rows = batch.rows();
  const std::vector<LayerSlice>& ls = layout_.layers();
  float* g = grad_.data();
  const float* p = params_.data();
  const LayerSlice& out = ls.back();
  size_t top = ls.size() - 1;  // the highest layer the dense loop below handles
  float loss = 0.0f;
  if (full_logits_) {
    loss = loss_and_grad(batch, config_.num_labels, config_.loss, scale, logits_.data(), &row_loss_,
                         config_.label_smoothing);
  } else {
    const float* h = acts_.back().data();
    float* dh = deltas_.back().data();
    if (shortlist_) {
      shortlist_->refresh(step_, p + out.w_offset, p + out.b_offset);
      const CandidateSet& cand = shortlist_->select(batch, h, step_);
      loss = shortlist_loss_grad(batch, h, out.in, p + out.w_offset, p + out.b_offset, out.out,
                                 config_.loss, scale, cand, dh, &ws_);
      out_ids_ = cand.ids;
    } else {
      loss = chunked_loss_grad(batch, h, out.in, p + out.w_offset, p + out.b_offset, out.out,
                               config_.loss, scale, config_.shortlist.score_chunk, g + out.w_offset,
                               g + out.b_offset, dh, &ws_);
    }
    top = ls.size() - 2;
    if (config_.dropout > 0.0f) dropout_backward(dh, rows, out.in, config_.dropout);
  }
  // Dense layers from `top` down; delta of layer l's output is logits_ for the last layer.
  for (size_t l = top; l >= 1; --l) {
    const float* dy = l == ls.size() - 1 ? logits_.data() : deltas_[l].data();
    const bool t = ls[l].by_output;
    (t ? dense_weight_grad_t : dense_weight_grad)(
        acts_[l - 1].data(), dy, rows, ls[l].in, ls[l].out, g + ls[l].w_offset, g + ls[l].b_offset);
    (t ? dense_input_grad_t : dense_input_grad)(dy, p + ls[l].w_offset, acts_[l - 1].data(), rows,
                                                ls[l].in, ls[l].out, deltas_[l - 1].data());
    // Masked by the post-dropout activations already; the kept ones carry 1 / (1 - p).
    if (config_.dropout > 0.0f) {
      dropout_backward(deltas_[l - 1].data(), rows, ls[l].in, config_.dropout);
    }
  }
  const index_t h0 = ls[0].out;
  column_sums(deltas_[0].data(), rows, h0, g + ls[0].b_offset);
  const auto need = static_cast<size_t>(features_.size() * h0);
  if (dw0_.size() < need) dw0_.resize(need);
  sparse_weight_grad(features_, deltas_[0].data(), h0, dw0_.data());
  return loss;
}

void CpuDevice::optimizer_step(const col_t* rows, index_t n, const float* g0, bool compact,
                               float lr, bool out_compact) {
  const OptimizerConfig& opt = config_.optimizer;
  rows_.note_step(rows, n, out_ids_.data(), static_cast<index_t>(out_ids_.size()));
  ++step_;
  const StepRule s = make_step_rule(opt, lr, step_);
  float* w = params_.data();
  float* s1 = state1_.empty() ? nullptr : state1_.data();
  float* s2 = state2_.empty() ? nullptr : state2_.data();
  const std::vector<LayerSlice>& ls = layout_.layers();
  // Sparse first layer: only the listed rows (lazy state).
  update_rows(s, rows, n, ls[0].out, w, s1, s2, g0, compact, opt.weight_decay);
  // Everything after W0 is dense: b0, W1, b1, ...; weight decay on weights only.
  const LayerSlice& out = ls.back();
  update_dense(s, layout_, ls[0].b_offset, shortlist_ ? out.w_offset : layout_.total(), w, s1, s2,
               grad_.data(), opt.weight_decay);
  if (!shortlist_) return;
  // Shortlisted output layer: only the step's candidates' rows, with its own optimiser.
  OptimizerConfig oc = opt;
  oc.kind = config_.shortlist.optimizer;
  if (oc.kind == OptimizerKind::kSgd) oc.momentum = 0.0f;
  const StepRule so = make_step_rule(oc, lr * config_.shortlist.lr_scale, step_);
  const auto nc = static_cast<index_t>(out_ids_.size());
  const float* gw = out_compact ? ws_.dw.data() : grad_.data() + out.w_offset;
  const float* gb = out_compact ? ws_.db.data() : grad_.data() + out.b_offset;
  auto at = [](float* base, index_t off) { return base ? base + off : nullptr; };
  update_rows(so, out_ids_.data(), nc, out.in, w + out.w_offset, at(s1, out.w_offset),
              at(s2, out.w_offset), gw, out_compact, opt.weight_decay);
  update_rows(so, out_ids_.data(), nc, 1, w + out.b_offset, at(s1, out.b_offset),
              at(s2, out.b_offset), gb, out_compact, 0.0f);
}

float CpuDevice::train_step(const CsrBatch& batch, float lr) {
  float loss = 0.0f;
  arena_.execute([&] {
    loss = forward_backward(batch, 1.0f);
    optimizer_step(features_.unique().data(), features_.size(), dw0_.data(), true, lr, true);
  });
  return loss;
}

float CpuDevice::gradient(const CsrBatch& batch, float scale) {
  float loss = 0.0f;
  arena_.execute([&] {
    loss = forward_backward(batch, scale);
    const index_t h0 = layout_.layers()[0].out;
    float* gw0 = grad_.data() + layout_.layers()[0].w_offset;
    // Clear what the previous gradient left in W0 rows, then scatter this batch's rows.
    if (grad_rows_all_) {
      std::fill(gw0, gw0 + layout_.sparse_weights(), 0.0f);
      grad_rows_all_ = false;
    } else {
      for (col_t f : grad_rows_) std::memset(gw0 + f * h0, 0, sizeof(float) * h0);
    }
    grad_rows_.assign(features_.unique().begin(), features_.unique().end());
    const index_t u = features_.size();
    for_blocks(u, kRowsPerTask, [&](index_t i0, index_t i1) {
      for (index_t i = i0; i < i1; ++i) {
        std::memcpy(gw0 + static_cast<index_t>(grad_rows_[i]) * h0, dw0_.data() + i * h0,
                    sizeof(float) * h0);
      }
    });
    if (shortlist_) scatter_output_gradient();
  });
  return loss;
}

void CpuDevice::apply_update(float lr) {
  arena_.execute([&] {
    const index_t h0 = layout_.layers()[0].out;
    const float* gw0 = grad_.data() + layout_.layers()[0].w_offset;
    if (grad_rows_all_) {
      // A gradient from outside (e.g. an all-reduce): its touched rows are the non-zero ones.
      scan_rows_.clear();
      const index_t d = layout_.layers()[0].in;
      for (index_t f = 0; f < d; ++f) {
        const float* r = gw0 + f * h0;
        for (index_t j = 0; j < h0; ++j) {
          if (r[j] != 0.0f) {
            scan_rows_.push_back(static_cast<col_t>(f));
            break;
          }
        }
      }
      if (shortlist_) scan_output_labels();
      optimizer_step(scan_rows_.data(), static_cast<index_t>(scan_rows_.size()), gw0, false, lr,
                     false);
    } else {
      if (shortlist_) out_ids_ = grad_out_ids_;
      optimizer_step(grad_rows_.data(), static_cast<index_t>(grad_rows_.size()), gw0, false, lr,
                     false);
    }
  });
}

float CpuDevice::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  HETSGD_CHECK(k >= 1, "top-k needs k >= 1, got " << k);
  float loss = 0.0f;
  arena_.execute([&] {
    forward(batch);
    if (full_logits_) {
      loss = loss_only(batch, config_.num_labels, config_.loss, logits_.data(), &row_loss_);
      topk_rows(logits_.data(), batch.rows(), config_.num_labels, k, labels, scores);
    } else {
      const LayerSlice& out = layout_.layers().back();
      const float* p = params_.data();
      loss = chunked_loss_topk(batch, acts_.back().data(), out.in, p + out.w_offset,
                               p + out.b_offset, out.out, config_.loss,
                               config_.shortlist.score_chunk, k, labels, scores, &ws_);
    }
  });
  return loss;
}

std::size_t CpuDevice::largest_scratch_floats() const {
  std::size_t m = ws_.largest_floats();
  for (const auto& v : acts_) m = std::max(m, v.capacity());
  for (const auto& v : deltas_) m = std::max(m, v.capacity());
  for (const std::vector<float>* v : {&logits_, &dw0_, &row_loss_}) m = std::max(m, v->capacity());
  return m;
}

void CpuDevice::read(Buffer which, float* dst) {
  const float* src = which == Buffer::kParams ? params_.data() : grad_.data();
  std::memcpy(dst, src, sizeof(float) * params_.size());
}

void CpuDevice::write(Buffer which, const float* src) {
  if (which == Buffer::kParams) {
    std::memcpy(params_.data(), src, sizeof(float) * params_.size());
    ann_.reset();
    return;
  }
  std::memcpy(grad_.data(), src, sizeof(float) * grad_.size());
  grad_rows_all_ = true;
  grad_out_all_ = shortlist_ != nullptr;
}

void CpuDevice::prefault_state() {
  // The optimiser reads a state element before it writes it. A page first read maps the
  // shared zero page, and the write after it is a copy-on-write fault that flushes the TLBs
  // of every thread of the process: about 14% of a shortlisted step at 670,091 labels with
  // two workers. Writing zeros first makes each page one plain fault, here. Only the spans
  // the optimiser updates are written: the sparse layer's rows under the model optimiser,
  // the output layer's rows under its own (none for a shortlist trained with plain SGD).
  const OptimizerConfig& opt = config_.optimizer;
  const bool model_state = opt.kind == OptimizerKind::kAdam || opt.momentum != 0.0f;
  const bool out_state =
      config_.uses_shortlist() ? config_.shortlist.optimizer == OptimizerKind::kAdam : model_state;
  const index_t out_begin = layout_.layers().back().w_offset;
  const index_t total = layout_.total();
  for (ZeroedFloats* s : {&state1_, &state2_}) {
    if (s->empty()) continue;
    if (model_state) std::memset(s->data(), 0, sizeof(float) * static_cast<size_t>(out_begin));
    if (out_state) {
      std::memset(s->data() + out_begin, 0, sizeof(float) * static_cast<size_t>(total - out_begin));
    }
  }
}

void CpuDevice::reset_optimizer() {
  // Fresh zero pages instead of writing zeros: state never touched stays non-resident.
  if (!state1_.empty()) state1_ = zeros(state1_.size());
  if (!state2_.empty()) state2_ = zeros(state2_.size());
  prefault_state();
  step_ = 0;
}

void CpuDevice::write_optimizer(const OptimizerState& state) {
  HETSGD_CHECK(state.first.size() == state1_.size() && state.second.size() == state2_.size(),
               "optimiser state of " << state.first.size() << " + " << state.second.size()
                                     << " floats does not fit " << name() << " (" << state1_.size()
                                     << " + " << state2_.size() << ")");
  HETSGD_CHECK(state.steps >= 0, "optimiser step count " << state.steps << " < 0");
  state1_.assign(state.first.begin(), state.first.end());
  state2_.assign(state.second.begin(), state.second.end());
  step_ = state.steps;
}

std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options) {
  return std::make_unique<CpuDevice>(ordinal, config, options.threads);
}

}  // namespace hetsgd::cpu
