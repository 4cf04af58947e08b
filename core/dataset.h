/// \file core/dataset.h
/// A multi-label sparse dataset (or a mini-batch of one) in CSR form.
///
/// Features: CSR with `rows + 1` offsets, column ids in [0, num_features) and float values.
/// Labels: CSR with `rows + 1` offsets and label ids in [0, num_labels); a row may have none.
/// A mini-batch is the same type (`CsrBatch`), assembled by gather_rows(). Plain value type:
/// not thread-safe for concurrent mutation, safe for concurrent reads.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace hetsgd {

/// Rows of sparse features with their label sets.
struct Dataset {
  index_t num_features = 0;          ///< width of the feature space (d)
  index_t num_labels = 0;            ///< number of labels (L)
  std::vector<index_t> x_indptr{0};  ///< rows + 1 offsets into x_indices / x_values
  std::vector<col_t> x_indices;      ///< feature ids, ascending within a row
  std::vector<float> x_values;       ///< feature values
  std::vector<index_t> y_indptr{0};  ///< rows + 1 offsets into y_indices
  std::vector<col_t> y_indices;      ///< label ids of each row

  /// Number of rows (points).
  index_t rows() const { return static_cast<index_t>(x_indptr.size()) - 1; }
  /// Number of stored feature values.
  index_t nnz() const { return static_cast<index_t>(x_indices.size()); }
  /// Number of stored labels.
  index_t label_nnz() const { return static_cast<index_t>(y_indices.size()); }
  /// Removes every row, keeps the shape.
  void clear_rows();
  /// Throws InvalidArgument naming `what` and the row if any offset or id is out of bounds.
  void validate(const std::string& what) const;
};

/// A mini-batch is a small Dataset.
using CsrBatch = Dataset;

/// Copies rows `rows[0..n)` of `src` into `out` (reusing its capacity); shape is copied too.
void gather_rows(const Dataset& src, const index_t* rows, index_t n, CsrBatch* out);

/// Copies the contiguous rows [begin, end) of `src` into `out`.
void slice_rows(const Dataset& src, index_t begin, index_t end, CsrBatch* out);

}  // namespace hetsgd
