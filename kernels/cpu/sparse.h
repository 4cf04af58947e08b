/// \file kernels/cpu/sparse.h
/// The sparse first layer on the host: CSR batch x dense W0, and its row-sparse gradient.
///
/// W0 is row-major [num_features x hidden], so the input of row r is
/// sum_{(f, v) in row r} v * W0[f, :] — a gather of contiguous hidden-wide rows, which is the
/// cache-friendly order for hidden widths of 64..1024. The gradient dW0 is non-zero only on rows
/// of features present in the batch; BatchFeatures lists them and transposes the batch onto
/// them, so each gradient row is computed by one task without atomics or a reduction.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dataset.h"
#include "core/types.h"

namespace hetsgd::cpu {

/// The distinct feature ids of one batch and the batch transposed onto them (CSC over the
/// distinct ids, entries in row order). Reuses its buffers between batches: after the first
/// few batches, build() allocates nothing. Not thread-safe; one per device.
class BatchFeatures {
 public:
  /// Prepares for a feature space of `num_features` ids (allocates the id -> slot map).
  void reset(index_t num_features);
  /// Lists the distinct ids of `batch` in order of first appearance and builds the transpose.
  /// Throws InvalidArgument naming the row when an id is outside [0, num_features).
  void build(const CsrBatch& batch);

  /// Number of distinct features U.
  index_t size() const { return static_cast<index_t>(unique_.size()); }
  /// Distinct feature ids, U entries; slot u of the transpose is feature unique()[u].
  const std::vector<col_t>& unique() const { return unique_; }
  /// Transpose: entries of slot u are [col_ptr[u], col_ptr[u+1]) of rows() / values().
  const index_t* col_ptr() const { return col_ptr_.data(); }
  const std::int32_t* rows() const { return rows_.data(); }
  const float* values() const { return values_.data(); }

 private:
  std::vector<std::int32_t> slot_;  ///< feature id -> slot, -1 when absent (reset after build)
  std::vector<col_t> unique_;
  std::vector<std::int32_t> nz_slot_;  ///< slot of each stored value of the batch
  std::vector<index_t> col_ptr_;
  std::vector<std::int32_t> rows_;
  std::vector<float> values_;
  std::vector<index_t> next_;  ///< placement cursor per slot (scratch of build())
  index_t num_features_ = 0;
};

/// H = relu(X W0 + b0) for the CSR batch X: H is [rows x hidden]. Runs in the caller's arena.
void sparse_forward(const CsrBatch& x, const float* w0, const float* b0, index_t hidden, float* h);

/// Compact row-sparse gradient: dw[u, :] = sum_{(r, v) in slot u} v * dh[r, :] for every slot
/// u of `features`; dw is [U x hidden], dh is [rows x hidden]. Runs in the caller's arena.
void sparse_weight_grad(const BatchFeatures& features, const float* dh, index_t hidden, float* dw);

}  // namespace hetsgd::cpu
