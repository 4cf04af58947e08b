/// \file kernels/cpu/cpu_row_exchange.h
/// CpuRowExchange: the CPU backend's RowExchange (core/row_exchange.h). It keeps the touched
/// set of sparse merges (the W0 rows and, shortlisted, the output labels that the replica's
/// optimiser steps changed since clear_touched()) and copies rows of the replica's parameters
/// and gradient in packed form (core/param_rows.h). The gradient's own row lists stay with
/// the device (CpuDevice: the gradient computation writes them).
///
/// Threads: the device's (one caller at a time).
#pragma once

#include <cstdint>
#include <vector>

#include "core/row_exchange.h"
#include "core/types.h"

namespace hetsgd::cpu {

class CpuDevice;

class CpuRowExchange final : public RowExchange {
 public:
  /// The exchange of `device` (which owns it and outlives it).
  explicit CpuRowExchange(CpuDevice& device) : device_(device) {}

  /// Adds W0 rows `rows[0..n)`, the dense part and the output labels `labels[0..m)` (empty
  /// for the full output layer) to the touched set: every optimiser step calls it.
  void note_step(const col_t* rows, index_t n, const col_t* labels, index_t m);

  ParamRows touched_since_sync() const override;
  void clear_touched() override;
  ParamRows gradient_rows() const override;
  void read_rows(const ParamRows& rows, float* dst) override;
  void write_rows(const ParamRows& rows, const float* src) override;
  void read_gradient_rows(const ParamRows& rows, float* dst) override;
  void write_gradient_rows(const ParamRows& rows, const float* src) override;
  float* host_params() override;
  void host_params_written() override;

 private:
  // Throws InvalidArgument unless `rows` fits the device's model (ids in range, same output
  // layer).
  void check(const ParamRows& rows) const;

  CpuDevice& device_;
  // Membership marks (sized on first use) and the lists of the touched set.
  std::vector<std::uint8_t> in_mark_, out_mark_;
  std::vector<col_t> in_, out_;
  bool dense_ = false;
};

}  // namespace hetsgd::cpu
