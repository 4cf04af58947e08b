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
#include "kernels/cpu/shortlist_output.h"
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

CpuDevice::CpuDevice(int ordinal, const ModelConfig& config, int threads,
                     const std::atomic<bool>* stop, bool prefault_optimizer)
    : ordinal_(ordinal),
      config_(config),
      layout_(config),
      threads_(resolve_threads(threads)),
      arena_(threads_),
      params_(static_cast<size_t>(layout_.total())),
      rows_(config_),
      scorer_(config_, layout_, threads_) {
  HETSGD_CHECK(ordinal >= 0, "cpu ordinal " << ordinal << " < 0");
  ensure_single_threaded_blas();
  const auto total = static_cast<size_t>(layout_.total());
  // The pages are made resident first, in blocks that a stop can cut short; init_params()
  // then only computes (about half a second per 400M parameters, on one core).
  float* p = params_.write();
  prefault_zeros(p, total, stop, name() + ": allocating the parameters");
  init_params(layout_, config_.seed, p);
  grad_ = zeros(total);
  const OptimizerConfig& opt = config_.optimizer;
  const bool short_list = config_.uses_shortlist();
  const bool out_adam = short_list && config_.shortlist.optimizer == OptimizerKind::kAdam;
  if (opt.kind == OptimizerKind::kAdam || opt.momentum != 0.0f || out_adam) {
    moments_.first = zeros(total);
  }
  if (opt.kind == OptimizerKind::kAdam || out_adam) moments_.second = zeros(total);
  if (prefault_optimizer) prefault_state(stop);
  output_ = make_output_strategy(config_, layout_, threads_, rows_);
  scratch_.features.reset(config_.num_features);
  scratch_.acts.resize(config_.hidden.size());
  scratch_.deltas.resize(config_.hidden.size());
}

Shortlist* CpuDevice::shortlist() {
  ShortlistOutput* s = output_->shortlist();
  return s != nullptr ? &s->selector() : nullptr;
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
  for (size_t l = 0; l < scratch_.acts.size(); ++l) {
    const auto n = static_cast<size_t>(rows * ls[l].out);
    if (scratch_.acts[l].size() < n) {
      scratch_.acts[l].resize(n);
      scratch_.deltas[l].resize(n);
    }
  }
}

void CpuDevice::forward(const CsrBatch& batch, bool train) {
  check_batch(batch);
  const index_t rows = batch.rows();
  reserve_rows(rows);
  float* logits = output_->block(rows);
  const std::vector<LayerSlice>& ls = layout_.layers();
  const float* p = params_.data();
  const bool drop = train && config_.dropout > 0.0f;
  // Each hidden layer's output is dropped before the next layer reads it; the mask is fixed by
  // (seed, ordinal, step, layer), so gradient() twice at one step sees the same mask.
  const auto dropout = [&](size_t l) {
    const std::uint64_t stream =
        math::dropout_stream(config_.seed, ordinal_, moments_.step, static_cast<int>(l));
    dropout_forward(scratch_.acts[l].data(), rows, ls[l].out, config_.dropout, stream);
  };
  sparse_forward(batch, p + ls[0].w_offset, p + ls[0].b_offset, ls[0].out, scratch_.acts[0].data());
  if (drop) dropout(0);
  const size_t hidden = scratch_.acts.size();
  for (size_t l = 1; l < ls.size(); ++l) {
    const bool is_output = l == hidden;
    if (is_output && logits == nullptr) break;  // the strategy scores the output layer
    (ls[l].by_output ? dense_forward_t : dense_forward)(
        scratch_.acts[l - 1].data(), rows, ls[l].in, ls[l].out, p + ls[l].w_offset,
        p + ls[l].b_offset, !is_output, is_output ? logits : scratch_.acts[l].data());
    if (drop && !is_output) dropout(l);
  }
}

float CpuDevice::forward_backward(const CsrBatch& in, float scale) {
  const bool drop_in = config_.input_dropout > 0.0f;
  if (drop_in) {
    math::drop_input_features(
        in, config_.input_dropout,
        math::dropout_stream(config_.seed, ordinal_, moments_.step, math::kInputDropoutLayer),
        &scratch_.dropped);
  }
  const CsrBatch& batch = drop_in ? scratch_.dropped : in;
  forward(batch, true);
  scratch_.features.build(batch);
  const index_t rows = batch.rows();
  const std::vector<LayerSlice>& ls = layout_.layers();
  float* g = grad_.data();
  const float* p = params_.data();
  const LayerSlice& out = ls.back();
  // The dense loop below handles the output layer too when its logits are one block.
  const float* logits = output_->block(rows);
  const size_t top = logits != nullptr ? ls.size() - 1 : ls.size() - 2;
  float* dh = scratch_.deltas.back().data();
  const float loss =
      output_->loss_grad(batch, scratch_.acts.back().data(), p, g, scale, moments_.step, dh);
  if (logits == nullptr && config_.dropout > 0.0f) {
    dropout_backward(dh, rows, out.in, config_.dropout);
  }
  // Dense layers from `top` down; delta of layer l's output is the logits' for the last layer.
  for (size_t l = top; l >= 1; --l) {
    const float* dy = l == ls.size() - 1 ? logits : scratch_.deltas[l].data();
    const bool t = ls[l].by_output;
    (t ? dense_weight_grad_t : dense_weight_grad)(scratch_.acts[l - 1].data(), dy, rows, ls[l].in,
                                                  ls[l].out, g + ls[l].w_offset,
                                                  g + ls[l].b_offset);
    (t ? dense_input_grad_t : dense_input_grad)(dy, p + ls[l].w_offset, scratch_.acts[l - 1].data(),
                                                rows, ls[l].in, ls[l].out,
                                                scratch_.deltas[l - 1].data());
    // Masked by the post-dropout activations already; the kept ones carry 1 / (1 - p).
    if (config_.dropout > 0.0f) {
      dropout_backward(scratch_.deltas[l - 1].data(), rows, ls[l].in, config_.dropout);
    }
  }
  const index_t h0 = ls[0].out;
  column_sums(scratch_.deltas[0].data(), rows, h0, g + ls[0].b_offset);
  const auto need = static_cast<size_t>(scratch_.features.size() * h0);
  if (scratch_.dw0.size() < need) scratch_.dw0.resize(need);
  sparse_weight_grad(scratch_.features, scratch_.deltas[0].data(), h0, scratch_.dw0.data());
  return loss;
}

void CpuDevice::optimizer_step(const col_t* rows, index_t n, const float* g0, bool compact,
                               float lr, bool out_compact) {
  const OptimizerConfig& opt = config_.optimizer;
  rows_.note_step(rows, n);
  ++moments_.step;
  const StepRule s = make_step_rule(opt, lr, moments_.step);
  float* w = params_.write();
  float* s1 = moments_.first.empty() ? nullptr : moments_.first.data();
  float* s2 = moments_.second.empty() ? nullptr : moments_.second.data();
  const std::vector<LayerSlice>& ls = layout_.layers();
  // Sparse first layer: only the listed rows (lazy state).
  update_rows(s, rows, n, ls[0].out, w, s1, s2, g0, compact, opt.weight_decay);
  // Everything after W0 is dense: b0, W1, b1, ...; weight decay on weights only.
  const LayerSlice& out = ls.back();
  ShortlistOutput* sparse_out = output_->shortlist();
  update_dense(s, layout_, ls[0].b_offset, sparse_out ? out.w_offset : layout_.total(), w, s1, s2,
               grad_.data(), opt.weight_decay);
  if (sparse_out) sparse_out->update({lr, moments_.step, w, s1, s2, grad_.data(), out_compact});
}

float CpuDevice::train_step(const CsrBatch& batch, float lr) {
  float loss = 0.0f;
  arena_.execute([&] {
    loss = forward_backward(batch, 1.0f);
    optimizer_step(scratch_.features.unique().data(), scratch_.features.size(), scratch_.dw0.data(),
                   true, lr, true);
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
    rows_.clear_gradient_inputs(layout_, grad_.data());
    std::vector<col_t>& held = rows_.gradient_inputs().ids;
    held.assign(scratch_.features.unique().begin(), scratch_.features.unique().end());
    const index_t u = scratch_.features.size();
    for_blocks(u, kRowsPerTask, [&](index_t i0, index_t i1) {
      for (index_t i = i0; i < i1; ++i) {
        std::memcpy(gw0 + static_cast<index_t>(held[i]) * h0, scratch_.dw0.data() + i * h0,
                    sizeof(float) * h0);
      }
    });
    if (ShortlistOutput* s = output_->shortlist()) s->gradient_done(grad_.data());
  });
  return loss;
}

void CpuDevice::apply_update(float lr) {
  arena_.execute([&] {
    const index_t h0 = layout_.layers()[0].out;
    const float* gw0 = grad_.data() + layout_.layers()[0].w_offset;
    const RowList& held = rows_.gradient_inputs();
    ShortlistOutput* sparse_out = output_->shortlist();
    if (held.all) {
      // A gradient from outside (e.g. an all-reduce): its touched rows are the non-zero ones.
      scratch_.scan_rows.clear();
      const index_t d = layout_.layers()[0].in;
      for (index_t f = 0; f < d; ++f) {
        const float* r = gw0 + f * h0;
        for (index_t j = 0; j < h0; ++j) {
          if (r[j] != 0.0f) {
            scratch_.scan_rows.push_back(static_cast<col_t>(f));
            break;
          }
        }
      }
      if (sparse_out) sparse_out->before_update(grad_.data());
      optimizer_step(scratch_.scan_rows.data(), static_cast<index_t>(scratch_.scan_rows.size()),
                     gw0, false, lr, false);
    } else {
      if (sparse_out) sparse_out->before_update(grad_.data());
      optimizer_step(held.ids.data(), static_cast<index_t>(held.ids.size()), gw0, false, lr, false);
    }
  });
}

float CpuDevice::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  HETSGD_CHECK(k >= 1, "top-k needs k >= 1, got " << k);
  float loss = 0.0f;
  arena_.execute([&] {
    forward(batch);
    loss =
        output_->loss_topk(batch, scratch_.acts.back().data(), params_.data(), k, labels, scores);
  });
  return loss;
}

float CpuDevice::score_all(const CsrBatch& batch, float* scores) {
  const std::vector<LayerSlice>& ls = layout_.layers();
  HETSGD_CHECK(ls.size() >= 2, "score_all needs a hidden layer");
  float loss = 0.0f;
  arena_.execute([&] {
    forward(batch);
    // The output layer once more, into the caller's rows x L block: the strategies score it in
    // chunks (or into their own block) and keep only a top-k.
    const LayerSlice& out = ls.back();
    (out.by_output ? dense_forward_t : dense_forward)(
        scratch_.acts.back().data(), batch.rows(), out.in, out.out, params_.data() + out.w_offset,
        params_.data() + out.b_offset, false, scores);
    if (batch.label_nnz() > 0) {
      loss = loss_only(batch, config_.num_labels, config_.loss, scores, &scratch_.row_loss);
    }
  });
  return loss;
}

std::size_t CpuDevice::largest_scratch_floats() const {
  std::size_t m = output_->largest_floats();
  for (const auto& v : scratch_.acts) m = std::max(m, v.capacity());
  for (const auto& v : scratch_.deltas) m = std::max(m, v.capacity());
  m = std::max(m, scratch_.dw0.capacity());
  return m;
}

void CpuDevice::read(Buffer which, float* dst) {
  const float* src = which == Buffer::kParams ? params_.data() : grad_.data();
  std::memcpy(dst, src, sizeof(float) * params_.size());
}

void CpuDevice::write(Buffer which, const float* src) {
  if (which == Buffer::kParams) {
    std::memcpy(params_.write(), src, sizeof(float) * params_.size());
    return;
  }
  std::memcpy(grad_.data(), src, sizeof(float) * grad_.size());
  rows_.gradient_replaced();
}

void CpuDevice::prefault_state(const std::atomic<bool>* stop) {
  // The optimiser reads a state element before it writes it. A page first read maps the
  // shared zero page, and the write after it is a copy-on-write fault that flushes the TLBs
  // of every thread of the process: about 14% of a shortlisted step at 670,091 labels with
  // two workers. Mapping the pages writable first (prefault_zeros) avoids both, here. Only the
  // spans the optimiser updates are mapped: the sparse layer's rows under the model optimiser,
  // the output layer's rows under its own (none for a shortlist trained with plain SGD).
  const OptimizerConfig& opt = config_.optimizer;
  const bool model_state = opt.kind == OptimizerKind::kAdam || opt.momentum != 0.0f;
  const bool out_state =
      config_.uses_shortlist() ? config_.shortlist.optimizer == OptimizerKind::kAdam : model_state;
  const index_t out_begin = layout_.layers().back().w_offset;
  const index_t total = layout_.total();
  const std::string what = name() + ": allocating the optimiser state";
  for (ZeroedFloats* s : {&moments_.first, &moments_.second}) {
    if (s->empty()) continue;
    if (model_state) prefault_zeros(s->data(), static_cast<size_t>(out_begin), stop, what);
    if (out_state) {
      prefault_zeros(s->data() + out_begin, static_cast<size_t>(total - out_begin), stop, what);
    }
  }
}

void CpuDevice::reset_optimizer() {
  // Fresh zero pages instead of writing zeros: state never touched stays non-resident.
  if (!moments_.first.empty()) moments_.first = zeros(moments_.first.size());
  if (!moments_.second.empty()) moments_.second = zeros(moments_.second.size());
  prefault_state();
  moments_.step = 0;
}

void CpuDevice::release_training_state() {
  // A calloc'd buffer of this size is its own mapping: freeing it unmaps the written pages,
  // and the fresh one costs nothing until a step writes it. The gradient's rows are
  // forgotten first (cleared in the old buffer), so that the fresh one holds none.
  rows_.clear_gradient_inputs(layout_, grad_.data());
  rows_.clear_gradient_labels(layout_, grad_.data());
  grad_ = zeros(grad_.size());
  if (!moments_.first.empty()) moments_.first = zeros(moments_.first.size());
  if (!moments_.second.empty()) moments_.second = zeros(moments_.second.size());
  moments_.step = 0;
}

OptimizerStream CpuDevice::stream_optimizer() {
  OptimizerStream out;
  out.first = static_cast<index_t>(moments_.first.size());
  out.second = static_cast<index_t>(moments_.second.size());
  out.steps = moments_.step;
  out.stream = [this](int which, const FloatSink& sink) {
    const ZeroedFloats& s = which == 0 ? moments_.first : moments_.second;
    if (!s.empty()) sink(s.data(), s.size());
  };
  return out;
}

void CpuDevice::write_optimizer(const OptimizerState& state) {
  HETSGD_CHECK(
      state.first.size() == moments_.first.size() && state.second.size() == moments_.second.size(),
      "optimiser state of " << state.first.size() << " + " << state.second.size()
                            << " floats does not fit " << name() << " (" << moments_.first.size()
                            << " + " << moments_.second.size() << ")");
  HETSGD_CHECK(state.steps >= 0, "optimiser step count " << state.steps << " < 0");
  moments_.first.assign(state.first.begin(), state.first.end());
  moments_.second.assign(state.second.begin(), state.second.end());
  moments_.step = state.steps;
}

std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options, const std::atomic<bool>* stop) {
  return std::make_unique<CpuDevice>(ordinal, config, options.threads, stop, !options.scoring_only);
}

}  // namespace hetsgd::cpu
