// CpuDevice's row-sparse bookkeeping: which rows its steps touched (for sparse merges), which
// rows its gradient buffer holds (for sparse all-reduces), row copies in packed form
// (core/param_rows.h), and the parameters and optimiser state handed out where they are.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_device.h"
#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {

constexpr index_t kLabelsPerTask = 256;  // W_out rows (labels) per task when clearing/scattering

std::vector<col_t> sorted(std::vector<col_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

void mark(std::vector<std::uint8_t>* marks, std::vector<col_t>* list, const col_t* ids,
          std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(ids[i]);
    if ((*marks)[k] == 0) {
      (*marks)[k] = 1;
      list->push_back(ids[i]);
    }
  }
}

}  // namespace

void CpuDevice::note_touched(const col_t* rows, index_t n) {
  if (touched_in_mark_.empty()) {
    touched_in_mark_.assign(static_cast<std::size_t>(config_.num_features), 0);
  }
  touched_dense_ = true;
  mark(&touched_in_mark_, &touched_in_, rows, static_cast<std::size_t>(n));
  if (!shortlist_) return;
  if (touched_out_mark_.empty()) {
    touched_out_mark_.assign(static_cast<std::size_t>(config_.num_labels), 0);
  }
  mark(&touched_out_mark_, &touched_out_, out_ids_.data(), out_ids_.size());
}

ParamRows CpuDevice::touched_since_sync() const {
  ParamRows s = ParamRows::none(shortlisted());
  s.dense = touched_dense_;
  s.input = sorted(touched_in_);
  s.output = sorted(touched_out_);
  return s;
}

void CpuDevice::clear_touched() {
  for (col_t f : touched_in_) touched_in_mark_[static_cast<std::size_t>(f)] = 0;
  for (col_t j : touched_out_) touched_out_mark_[static_cast<std::size_t>(j)] = 0;
  touched_in_.clear();
  touched_out_.clear();
  touched_dense_ = false;
}

ParamRows CpuDevice::gradient_rows() const {
  if (grad_rows_all_ || grad_out_all_) return ParamRows::all();
  ParamRows s = ParamRows::none(shortlisted());
  s.dense = true;
  s.input = sorted(grad_rows_);
  if (shortlist_) s.output = sorted(grad_out_ids_);
  return s;
}

void CpuDevice::check_rows(const ParamRows& rows) const {
  if (rows.everything) return;
  HETSGD_CHECK(rows.output_rows == shortlisted(),
               "row set for a " << (rows.output_rows ? "shortlisted" : "full")
                                << " output layer given to " << name() << ", whose layer is "
                                << (shortlisted() ? "shortlisted" : "full"));
  HETSGD_CHECK(
      rows.input.empty() || (rows.input.front() >= 0 && rows.input.back() < config_.num_features),
      "input row " << (rows.input.empty() ? 0 : rows.input.back()) << " outside [0, "
                   << config_.num_features << ")");
  HETSGD_CHECK(
      rows.output.empty() || (rows.output.front() >= 0 && rows.output.back() < config_.num_labels),
      "output row " << (rows.output.empty() ? 0 : rows.output.back()) << " outside [0, "
                    << config_.num_labels << ")");
}

void CpuDevice::read_rows(const ParamRows& rows, float* dst) {
  check_rows(rows);
  arena_.execute([&] { pack_rows(layout_, rows, params_.data(), dst); });
}

void CpuDevice::write_rows(const ParamRows& rows, const float* src) {
  check_rows(rows);
  arena_.execute([&] { unpack_rows(layout_, rows, src, params_.data()); });
  ann_.reset();
}

void CpuDevice::host_params_written() { ann_.reset(); }

OptimizerStream CpuDevice::stream_optimizer() {
  OptimizerStream out;
  out.first = static_cast<index_t>(state1_.size());
  out.second = static_cast<index_t>(state2_.size());
  out.steps = step_;
  out.stream = [this](int which, const FloatSink& sink) {
    const ZeroedFloats& s = which == 0 ? state1_ : state2_;
    if (!s.empty()) sink(s.data(), s.size());
  };
  return out;
}

void CpuDevice::read_gradient_rows(const ParamRows& rows, float* dst) {
  check_rows(rows);
  arena_.execute([&] { pack_rows(layout_, rows, grad_.data(), dst); });
}

void CpuDevice::write_gradient_rows(const ParamRows& rows, const float* src) {
  if (rows.everything) {
    write_gradient(src);
    return;
  }
  check_rows(rows);
  HETSGD_CHECK(rows.dense && rows.dense_begin == 0 && rows.dense_end < 0,
               "write_gradient_rows: the rows must include the whole dense part");
  arena_.execute([&] {
    // Clear the rows the previous gradient left, then write the listed ones: the buffer is
    // then exactly the packed gradient, and the untouched pages stay non-resident.
    const index_t h0 = layout_.layers()[0].out;
    float* gw0 = grad_.data() + layout_.layers()[0].w_offset;
    if (grad_rows_all_) {
      std::fill(gw0, gw0 + layout_.sparse_weights(), 0.0f);
    } else {
      for (col_t f : grad_rows_) std::memset(gw0 + f * h0, 0, sizeof(float) * h0);
    }
    if (shortlist_) clear_output_gradient();
    unpack_rows(layout_, rows, src, grad_.data());
  });
  grad_rows_ = rows.input;
  grad_rows_all_ = false;
  if (shortlist_) grad_out_ids_ = rows.output;
}

void CpuDevice::clear_output_gradient() {
  const LayerSlice& out = layout_.layers().back();
  float* gw = grad_.data() + out.w_offset;
  float* gb = grad_.data() + out.b_offset;
  if (grad_out_all_) {
    std::fill(gw, gw + out.in * out.out, 0.0f);
    std::fill(gb, gb + out.out, 0.0f);
  } else {
    const auto n = static_cast<index_t>(grad_out_ids_.size());
    for_blocks(n, kLabelsPerTask, [&](index_t c0, index_t c1) {
      for (index_t c = c0; c < c1; ++c) {
        const auto j = static_cast<index_t>(grad_out_ids_[c]);
        std::memset(gw + j * out.in, 0, sizeof(float) * out.in);
        gb[j] = 0.0f;
      }
    });
  }
  grad_out_ids_.clear();
  grad_out_all_ = false;
}

void CpuDevice::scatter_output_gradient() {
  // Like W0's rows: clear the labels the previous gradient left, then write this batch's.
  clear_output_gradient();
  const LayerSlice& out = layout_.layers().back();
  float* gw = grad_.data() + out.w_offset;
  float* gb = grad_.data() + out.b_offset;
  const auto nc = static_cast<index_t>(out_ids_.size());
  for_blocks(nc, kLabelsPerTask, [&](index_t c0, index_t c1) {
    for (index_t c = c0; c < c1; ++c) {
      const auto j = static_cast<index_t>(out_ids_[c]);
      std::memcpy(gw + j * out.in, ws_.dw.data() + c * out.in, sizeof(float) * out.in);
      gb[j] = ws_.db[c];
    }
  });
  grad_out_ids_ = out_ids_;
}

void CpuDevice::scan_output_labels() {
  // A gradient from outside: its touched labels are those with any non-zero entry.
  const LayerSlice& out = layout_.layers().back();
  const float* gw = grad_.data() + out.w_offset;
  const float* gb = grad_.data() + out.b_offset;
  out_ids_.clear();
  for (index_t j = 0; j < out.out; ++j) {
    const float* row = gw + j * out.in;
    bool hit = gb[j] != 0.0f;
    for (index_t i = 0; i < out.in && !hit; ++i) hit = row[i] != 0.0f;
    if (hit) out_ids_.push_back(static_cast<col_t>(j));
  }
  grad_out_ids_ = out_ids_;
  grad_out_all_ = false;
}

}  // namespace hetsgd::cpu
