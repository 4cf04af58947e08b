/// \file kernels/cpu/cpu_row_exchange.h
/// CpuRowExchange: the CPU backend's RowExchange (core/row_exchange.h). It reads the touched
/// set and the gradient's rows from the replica's SparseRows and copies rows of its
/// parameters and gradient in packed form (core/param_rows.h). It sees what it moves and
/// nothing more: the device through the Device interface (its name, model and whole-buffer
/// writes), the parameters (whose writes bump their version), the gradient buffer, the row
/// bookkeeping and the arena the copies run in.
///
/// Threads: the device's (one caller at a time).
#pragma once

#include <tbb/task_arena.h>

#include "core/device.h"
#include "core/row_exchange.h"
#include "kernels/cpu/sparse_rows.h"
#include "kernels/cpu/versioned_params.h"
#include "kernels/cpu/zeroed_buffer.h"

namespace hetsgd::cpu {

class CpuRowExchange final : public RowExchange {
 public:
  /// The exchange of `device`, over its parameters, gradient buffer, row bookkeeping and
  /// arena (all owned by the device, which owns the exchange).
  CpuRowExchange(Device& device, tbb::task_arena& arena, VersionedParams& params,
                 ZeroedFloats& grad, SparseRows& rows)
      : device_(device), arena_(arena), params_(params), grad_(grad), rows_(rows) {}

  ParamRows touched_since_sync() const override { return rows_.touched(); }
  void clear_touched() override { rows_.clear_touched(); }
  ParamRows gradient_rows() const override { return rows_.gradient_rows(); }
  void read_rows(const ParamRows& rows, float* dst) override;
  void write_rows(const ParamRows& rows, const float* src) override;
  void read_gradient_rows(const ParamRows& rows, float* dst) override;
  void write_gradient_rows(const ParamRows& rows, const float* src) override;
  float* host_params() override { return params_.write(); }
  void host_params_written() override { params_.written(); }

 private:
  // Throws InvalidArgument unless `rows` fits the device's model (ids in range, same output
  // layer).
  void check(const ParamRows& rows) const;

  Device& device_;
  tbb::task_arena& arena_;
  VersionedParams& params_;
  ZeroedFloats& grad_;
  SparseRows& rows_;
};

}  // namespace hetsgd::cpu
