/// \file core/row_exchange.h
/// RowExchange: the capability of a replica to say which rows of its parameters it changed,
/// to move only those rows (core/param_rows.h), and to hand out its parameters where they
/// live in host memory. Merges and all-reduces ask a Device for it once
/// (Device::row_exchange()); a device without it (null) is merged densely.
///
/// Threads: like the Device it belongs to (one caller at a time, the device idle during
/// exchanges); read_rows/write_rows of different devices may run concurrently.
#pragma once

#include <utility>

#include "core/param_rows.h"

namespace hetsgd {

class RowExchange {
 public:
  virtual ~RowExchange() = default;

  /// Rows the replica's own optimiser steps (train_step, apply_update) changed since the last
  /// clear_touched() or construction; the dense part when any step ran. Writes from outside
  /// (Device::write, write_rows, write_optimizer) are not counted: the caller knows what it
  /// wrote.
  virtual ParamRows touched_since_sync() const = 0;
  /// Starts a new touched set (after a merge has made the replica's touched rows equal the
  /// centre's again).
  virtual void clear_touched() = 0;
  /// Rows where the gradient buffer may be non-zero: those of the last gradient(), or those
  /// written by write_gradient_rows(); ParamRows::all() after a whole-buffer write.
  virtual ParamRows gradient_rows() const = 0;

  /// Copies the parameters `rows` out to / in from host memory in packed form
  /// (packed_size(layout, rows) floats).
  virtual void read_rows(const ParamRows& rows, float* dst) = 0;
  virtual void write_rows(const ParamRows& rows, const float* src) = 0;
  /// Copies the gradient rows `rows` out in packed form.
  virtual void read_gradient_rows(const ParamRows& rows, float* dst) = 0;
  /// Sets the gradient to the packed `src` on `rows` and to zero everywhere else (the rows of
  /// a sparse all-reduce); apply_update() then updates the listed rows and the dense part.
  /// `rows` must include the whole dense part (or be all()).
  virtual void write_gradient_rows(const ParamRows& rows, const float* src) = 0;

  /// The replica's parameters (layout order) when they live in this process's host memory
  /// and a host merge may average and restart them where they are, without staging copies
  /// through read_rows()/write_rows(); null otherwise. Only while the device is idle; after
  /// writing through it call host_params_written().
  virtual float* host_params() = 0;
  /// Tells the device that its parameters were written through host_params().
  virtual void host_params_written() = 0;
};

/// A RowExchange that forwards every call to `inner` after `before()` (e.g. a liveness check
/// of a fault-injected device). The listing calls (touched_since_sync, gradient_rows,
/// clear_touched) are forwarded unchecked: they only describe the replica.
template <class Before>
class CheckedRowExchange final : public RowExchange {
 public:
  CheckedRowExchange(RowExchange& inner, Before before)
      : inner_(inner), before_(std::move(before)) {}
  ParamRows touched_since_sync() const override { return inner_.touched_since_sync(); }
  void clear_touched() override { inner_.clear_touched(); }
  ParamRows gradient_rows() const override { return inner_.gradient_rows(); }
  void read_rows(const ParamRows& rows, float* dst) override { checked().read_rows(rows, dst); }
  void write_rows(const ParamRows& rows, const float* src) override {
    checked().write_rows(rows, src);
  }
  void read_gradient_rows(const ParamRows& rows, float* dst) override {
    checked().read_gradient_rows(rows, dst);
  }
  void write_gradient_rows(const ParamRows& rows, const float* src) override {
    checked().write_gradient_rows(rows, src);
  }
  float* host_params() override { return checked().host_params(); }
  void host_params_written() override { inner_.host_params_written(); }

 private:
  // `inner` once `before()` has passed: every data call goes through here.
  RowExchange& checked() {
    before_();
    return inner_;
  }
  RowExchange& inner_;
  Before before_;
};

}  // namespace hetsgd
