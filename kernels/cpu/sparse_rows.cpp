#include "kernels/cpu/sparse_rows.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kLabelsPerTask = 256;  // W_out rows (labels) cleared per task

// ParamRows lists are ascending and unique (core/param_rows.h): unions and merges of several
// replicas' lists are then linear walks.
std::vector<col_t> sorted(std::vector<col_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// A byte per row beside the list: adding a row is O(1) and a duplicate is skipped, and
// clear_touched() resets only the listed bytes, so a merge cycle costs the rows it touched,
// not the feature or label count.
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

SparseRows::SparseRows(const ModelConfig& config)
    : num_features_(config.num_features),
      num_labels_(config.num_labels),
      output_rows_(config.uses_shortlist()) {}

void SparseRows::gradient_replaced() {
  grad_inputs_.all = true;
  if (output_rows_) grad_labels_.all = true;
}

void SparseRows::clear_gradient_inputs(const ParamLayout& layout, float* grad) {
  const index_t h0 = layout.layers()[0].out;
  float* gw0 = grad + layout.layers()[0].w_offset;
  // After a write from outside (gradient_replaced()) any row may be non-zero and only a whole
  // clear is sure; otherwise only the listed rows are, and a step costs its own rows, not W0.
  if (grad_inputs_.all) {
    std::fill(gw0, gw0 + layout.sparse_weights(), 0.0f);
  } else {
    for (col_t f : grad_inputs_.ids) std::memset(gw0 + f * h0, 0, sizeof(float) * h0);
  }
  grad_inputs_.ids.clear();
  grad_inputs_.all = false;
}

void SparseRows::clear_gradient_labels(const ParamLayout& layout, float* grad) {
  if (!output_rows_) return;
  const LayerSlice& out = layout.layers().back();
  float* gw = grad + out.w_offset;
  float* gb = grad + out.b_offset;
  if (grad_labels_.all) {
    std::fill(gw, gw + out.in * out.out, 0.0f);
    std::fill(gb, gb + out.out, 0.0f);
  } else {
    const std::vector<col_t>& ids = grad_labels_.ids;
    for_blocks(static_cast<index_t>(ids.size()), kLabelsPerTask, [&](index_t c0, index_t c1) {
      for (index_t c = c0; c < c1; ++c) {
        const auto j = static_cast<index_t>(ids[c]);
        std::memset(gw + j * out.in, 0, sizeof(float) * out.in);
        gb[j] = 0.0f;
      }
    });
  }
  grad_labels_.ids.clear();
  grad_labels_.all = false;
}

ParamRows SparseRows::gradient_rows() const {
  // A listed subset would miss the rows a write from outside set: the whole buffer then.
  if (grad_inputs_.all || (output_rows_ && grad_labels_.all)) return ParamRows::all();
  ParamRows s = ParamRows::none(output_rows_);
  s.dense = true;
  s.input = sorted(grad_inputs_.ids);
  if (output_rows_) s.output = sorted(grad_labels_.ids);
  return s;
}

void SparseRows::note_step(const col_t* rows, index_t n) {
  // The marks are allocated at the first step: a replica that only scores holds none.
  if (in_mark_.empty()) in_mark_.assign(static_cast<std::size_t>(num_features_), 0);
  dense_ = true;  // every step updates the dense part (b0, the hidden layers, a full output)
  mark(&in_mark_, &in_, rows, static_cast<std::size_t>(n));
  if (!output_rows_) return;
  if (out_mark_.empty()) out_mark_.assign(static_cast<std::size_t>(num_labels_), 0);
  mark(&out_mark_, &out_, step_labels_.data(), step_labels_.size());
}

ParamRows SparseRows::touched() const {
  ParamRows s = ParamRows::none(output_rows_);
  s.dense = dense_;
  s.input = sorted(in_);
  s.output = sorted(out_);
  return s;
}

void SparseRows::clear_touched() {
  for (col_t f : in_) in_mark_[static_cast<std::size_t>(f)] = 0;
  for (col_t j : out_) out_mark_[static_cast<std::size_t>(j)] = 0;
  in_.clear();
  out_.clear();
  dense_ = false;
}

}  // namespace hetsgd::cpu
