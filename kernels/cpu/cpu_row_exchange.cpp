#include "kernels/cpu/cpu_row_exchange.h"

#include "core/error.h"

namespace hetsgd::cpu {

void CpuRowExchange::check(const ParamRows& rows) const {
  if (rows.everything) return;
  const ModelConfig& config = device_.config();
  const bool shortlisted = rows_.output_rows();
  HETSGD_CHECK(rows.output_rows == shortlisted,
               "row set for a " << (rows.output_rows ? "shortlisted" : "full")
                                << " output layer given to " << device_.name()
                                << ", whose layer is " << (shortlisted ? "shortlisted" : "full"));
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
  arena_.execute([&] { pack_rows(device_.layout(), rows, params_.data(), dst); });
}

void CpuRowExchange::write_rows(const ParamRows& rows, const float* src) {
  check(rows);
  arena_.execute([&] { unpack_rows(device_.layout(), rows, src, params_.write()); });
}

void CpuRowExchange::read_gradient_rows(const ParamRows& rows, float* dst) {
  check(rows);
  arena_.execute([&] { pack_rows(device_.layout(), rows, grad_.data(), dst); });
}

void CpuRowExchange::write_gradient_rows(const ParamRows& rows, const float* src) {
  if (rows.everything) {
    device_.write_gradient(src);
    return;
  }
  check(rows);
  HETSGD_CHECK(rows.dense && rows.dense_begin == 0 && rows.dense_end < 0,
               "write_gradient_rows: the rows must include the whole dense part");
  const ParamLayout& layout = device_.layout();
  arena_.execute([&] {
    // Clear the rows the previous gradient left, then write the listed ones: the buffer is
    // then exactly the packed gradient, and the untouched pages stay non-resident.
    rows_.clear_gradient_inputs(layout, grad_.data());
    rows_.clear_gradient_labels(layout, grad_.data());
    unpack_rows(layout, rows, src, grad_.data());
  });
  rows_.gradient_inputs().ids = rows.input;
  if (rows_.output_rows()) rows_.gradient_labels().ids = rows.output;
}

}  // namespace hetsgd::cpu
