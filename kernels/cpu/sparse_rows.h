/// \file kernels/cpu/sparse_rows.h
/// SparseRows: which rows of a CPU replica's row-sparse parts (the W0 rows and, with the
/// shortlisted output layer, the output labels) its gradient buffer, its current step and its
/// steps since the last merge concern. One object per replica, owned by the device and shared
/// with the shortlisted output layer (ShortlistOutput) and the row exchange (CpuRowExchange):
///   * the gradient's rows: the W0 rows and labels the gradient buffer may hold (a list, or
///     any row after the whole buffer was written from outside). gradient() clears them before
///     it writes its own, so the buffer is never cleared whole; a sparse all-reduce moves them;
///   * the step's labels: the output labels the current optimiser step updates;
///   * the touched set: the W0 rows and labels that optimiser steps updated since
///     clear_touched(), and whether any step ran (the dense part), for row-sparse merges.
/// Threads: the device's (one caller at a time); the clears run in the caller's arena.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/param_rows.h"
#include "core/types.h"

namespace hetsgd::cpu {

/// Rows a buffer may hold.
struct RowList {
  std::vector<col_t> ids;  ///< the listed rows (when not `all`), unordered
  bool all = false;        ///< any row may be non-zero
};

class SparseRows {
 public:
  /// For `config`'s model; the output labels are row-sparse when it uses the shortlist.
  explicit SparseRows(const ModelConfig& config);

  /// True when the output layer is row-sparse (shortlisted).
  bool output_rows() const { return output_rows_; }

  /// The W0 rows the gradient buffer may hold.
  RowList& gradient_inputs() { return grad_inputs_; }
  /// The output labels the gradient buffer may hold (output_rows() only).
  RowList& gradient_labels() { return grad_labels_; }
  /// The output labels the current optimiser step updates (output_rows() only; else empty).
  std::vector<col_t>& step_labels() { return step_labels_; }
  const std::vector<col_t>& step_labels() const { return step_labels_; }

  /// The whole gradient buffer was written from outside: any row may be non-zero.
  void gradient_replaced();
  /// Zeroes the W0 rows that `grad` (a whole gradient buffer of `layout`) may hold and forgets
  /// them.
  void clear_gradient_inputs(const ParamLayout& layout, float* grad);
  /// The same for the output labels (nothing unless output_rows()).
  void clear_gradient_labels(const ParamLayout& layout, float* grad);
  /// The rows the gradient buffer holds, sorted; all() when any row may be non-zero.
  ParamRows gradient_rows() const;

  /// Adds W0 rows `rows[0..n)`, the dense part and the step's labels to the touched set:
  /// every optimiser step calls it.
  void note_step(const col_t* rows, index_t n);
  /// The touched set, sorted.
  ParamRows touched() const;
  void clear_touched();

 private:
  index_t num_features_;
  index_t num_labels_;
  bool output_rows_;
  RowList grad_inputs_;
  RowList grad_labels_;
  std::vector<col_t> step_labels_;
  // Membership marks (sized on first use) and the lists of the touched set.
  std::vector<std::uint8_t> in_mark_, out_mark_;
  std::vector<col_t> in_, out_;
  bool dense_ = false;
};

}  // namespace hetsgd::cpu
