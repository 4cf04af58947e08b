/// \file core/dataset.h
/// A multi-label sparse dataset (or a mini-batch of one) in CSR form.
///
/// Features: CSR with `rows + 1` offsets, column ids in [0, num_features) and float values.
/// Labels: CSR with `rows + 1` offsets and label ids in [0, num_labels); a row may have none.
/// A mini-batch is the same type (`CsrBatch`), assembled by gather_rows(). Plain value type:
/// not thread-safe for concurrent mutation, safe for concurrent reads.
#pragma once

#include <cstdint>
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
  /// Throws InvalidArgument naming `what`, the field and the row when the arrays break a
  /// rule of validate_csr().
  void validate(const std::string& what) const;
};

/// Read-only view of CSR arrays that may not belong to a Dataset yet (a memory-mapped cache
/// file checked before anything is copied out of it).
struct CsrView {
  index_t rows = 0;                   ///< number of rows
  index_t num_features = 0;           ///< exclusive bound on feature ids
  index_t num_labels = 0;             ///< exclusive bound on label ids
  index_t nnz = 0;                    ///< length of x_indices and x_values
  index_t label_nnz = 0;              ///< length of y_indices
  const index_t* x_indptr = nullptr;  ///< rows + 1 feature offsets
  const index_t* y_indptr = nullptr;  ///< rows + 1 label offsets
  const col_t* x_indices = nullptr;   ///< nnz feature ids
  const float* x_values = nullptr;    ///< nnz feature values
  const col_t* y_indices = nullptr;   ///< label_nnz label ids
};

/// Checks the rules every reader enforces (the text readers by construction, the binary cache
/// explicitly): shape counts non-negative and ids below 2^31; both offset arrays start at 0,
/// never decrease and end at nnz / label_nnz; feature ids in [0, num_features) and strictly
/// ascending within a row (sorted, no repeats); label ids in [0, num_labels) and strictly
/// ascending within a row (a set); every value finite. Throws InvalidArgument
/// "<what>: <field>[<i>] (row r) = v <rule>". O(rows + nnz + label_nnz), no allocation.
void validate_csr(const CsrView& csr, const std::string& what);

/// The CsrView of `data`.
CsrView view_of(const Dataset& data);

/// Copies the five counts that describe a CSR set's shape (rows, num_features, num_labels, nnz,
/// label_nnz) from one record that holds them as fields (a CsrView, a cache header) to another
/// (a CsrView, statistics), so every description of a set carries the same five.
template <class From, class To>
void copy_csr_counts(const From& from, To* to) {
  to->rows = static_cast<index_t>(from.rows);
  to->num_features = static_cast<index_t>(from.num_features);
  to->num_labels = static_cast<index_t>(from.num_labels);
  to->nnz = static_cast<index_t>(from.nnz);
  to->label_nnz = static_cast<index_t>(from.label_nnz);
}

/// A mini-batch is a small Dataset.
using CsrBatch = Dataset;

/// Copies rows `rows[0..n)` of `src` into `out` (reusing its capacity); shape is copied too.
void gather_rows(const Dataset& src, const index_t* rows, index_t n, CsrBatch* out);

/// Appends every row of `src` (its ids within `dst`'s shape) to `dst`.
void append_rows(const Dataset& src, Dataset* dst);

/// Every row of `src` in a seeded random order (the same `seed`, the same order): where an
/// evaluation scores the first rows of a set, they are then a random draw of it.
Dataset draw_rows(const Dataset& src, std::uint64_t seed);

/// Copies the contiguous rows [begin, end) of `src` into `out`.
void slice_rows(const Dataset& src, index_t begin, index_t end, CsrBatch* out);

}  // namespace hetsgd
