#include "kernels/cpu/cpu_row_exchange.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_device.h"

namespace hetsgd::cpu {
namespace {

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

void CpuRowExchange::note_step(const col_t* rows, index_t n, const col_t* labels, index_t m) {
  const ModelConfig& config = device_.config_;
  if (in_mark_.empty()) in_mark_.assign(static_cast<std::size_t>(config.num_features), 0);
  dense_ = true;
  mark(&in_mark_, &in_, rows, static_cast<std::size_t>(n));
  if (!device_.shortlisted()) return;
  if (out_mark_.empty()) out_mark_.assign(static_cast<std::size_t>(config.num_labels), 0);
  mark(&out_mark_, &out_, labels, static_cast<std::size_t>(m));
}

ParamRows CpuRowExchange::touched_since_sync() const {
  ParamRows s = ParamRows::none(device_.shortlisted());
  s.dense = dense_;
  s.input = sorted(in_);
  s.output = sorted(out_);
  return s;
}

void CpuRowExchange::clear_touched() {
  for (col_t f : in_) in_mark_[static_cast<std::size_t>(f)] = 0;
  for (col_t j : out_) out_mark_[static_cast<std::size_t>(j)] = 0;
  in_.clear();
  out_.clear();
  dense_ = false;
}

ParamRows CpuRowExchange::gradient_rows() const {
  const CpuDevice& d = device_;
  std::vector<col_t> labels;
  if (d.grad_rows_.all || !d.output_->gradient_labels(&labels)) return ParamRows::all();
  ParamRows s = ParamRows::none(d.shortlisted());
  s.dense = true;
  s.input = sorted(d.grad_rows_.rows);
  s.output = sorted(std::move(labels));
  return s;
}

void CpuRowExchange::check(const ParamRows& rows) const {
  if (rows.everything) return;
  const CpuDevice& d = device_;
  const ModelConfig& config = d.config_;
  HETSGD_CHECK(rows.output_rows == d.shortlisted(),
               "row set for a " << (rows.output_rows ? "shortlisted" : "full")
                                << " output layer given to " << d.name() << ", whose layer is "
                                << (d.shortlisted() ? "shortlisted" : "full"));
  HETSGD_CHECK(
      rows.input.empty() || (rows.input.front() >= 0 && rows.input.back() < config.num_features),
      "input row " << (rows.input.empty() ? 0 : rows.input.back()) << " outside [0, "
                   << config.num_features << ")");
  HETSGD_CHECK(
      rows.output.empty() || (rows.output.front() >= 0 && rows.output.back() < config.num_labels),
      "output row " << (rows.output.empty() ? 0 : rows.output.back()) << " outside [0, "
                    << config.num_labels << ")");
}

void CpuRowExchange::read_rows(const ParamRows& rows, float* dst) {
  check(rows);
  CpuDevice& d = device_;
  d.arena_.execute([&] { pack_rows(d.layout_, rows, d.params_.data(), dst); });
}

void CpuRowExchange::write_rows(const ParamRows& rows, const float* src) {
  check(rows);
  CpuDevice& d = device_;
  d.arena_.execute([&] { unpack_rows(d.layout_, rows, src, d.params_.data()); });
  d.ann_.reset();
}

float* CpuRowExchange::host_params() { return device_.params_.data(); }

void CpuRowExchange::host_params_written() { device_.ann_.reset(); }

void CpuRowExchange::read_gradient_rows(const ParamRows& rows, float* dst) {
  check(rows);
  CpuDevice& d = device_;
  d.arena_.execute([&] { pack_rows(d.layout_, rows, d.grad_.data(), dst); });
}

void CpuRowExchange::write_gradient_rows(const ParamRows& rows, const float* src) {
  CpuDevice& d = device_;
  if (rows.everything) {
    d.write_gradient(src);
    return;
  }
  check(rows);
  HETSGD_CHECK(rows.dense && rows.dense_begin == 0 && rows.dense_end < 0,
               "write_gradient_rows: the rows must include the whole dense part");
  const ParamLayout& layout = d.layout_;
  d.arena_.execute([&] {
    // Clear the rows the previous gradient left, then write the listed ones: the buffer is
    // then exactly the packed gradient, and the untouched pages stay non-resident.
    const index_t h0 = layout.layers()[0].out;
    float* gw0 = d.grad_.data() + layout.layers()[0].w_offset;
    if (d.grad_rows_.all) {
      std::fill(gw0, gw0 + layout.sparse_weights(), 0.0f);
    } else {
      for (col_t f : d.grad_rows_.rows) std::memset(gw0 + f * h0, 0, sizeof(float) * h0);
    }
    d.output_->replace_gradient_labels(d.grad_.data(), rows.output);
    unpack_rows(layout, rows, src, d.grad_.data());
  });
  d.grad_rows_.rows = rows.input;
  d.grad_rows_.all = false;
}

}  // namespace hetsgd::cpu
