// CpuDevice's gradient-row bookkeeping (which rows its gradient buffer holds, for sparse
// all-reduces and row-sparse updates) and its optimiser state handed out where it is. The
// touched set of merges and the row copies are CpuRowExchange's (cpu_row_exchange.cpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_device.h"
#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {

constexpr index_t kLabelsPerTask = 256;  // W_out rows (labels) per task when clearing/scattering

}  // namespace

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
