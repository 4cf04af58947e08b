#include "kernels/cpu/sparse.h"

#include <cstring>

#include "core/error.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowBlock = 32;   // batch rows per task in the forward gather
constexpr index_t kSlotBlock = 64;  // distinct features per task in the gradient
}  // namespace

void BatchFeatures::reset(index_t num_features) {
  num_features_ = num_features;
  slot_.assign(static_cast<size_t>(num_features), -1);
}

void BatchFeatures::build(const CsrBatch& batch) {
  const index_t nnz = batch.nnz();
  HETSGD_CHECK(batch.rows() < (index_t{1} << 31),
               "batch of " << batch.rows() << " rows exceeds the 2^31-1 rows a batch may hold");
  unique_.clear();
  col_ptr_.assign(1, 0);
  nz_slot_.resize(static_cast<size_t>(nnz));
  // Pass 1: slots in order of first appearance and per-slot counts (in col_ptr_[slot + 1]).
  for (index_t r = 0; r < batch.rows(); ++r) {
    for (index_t p = batch.x_indptr[r]; p < batch.x_indptr[r + 1]; ++p) {
      const col_t f = batch.x_indices[p];
      if (f < 0 || f >= num_features_) {
        // Restore the map before throwing so the device stays usable.
        for (col_t u : unique_) slot_[u] = -1;
        HETSGD_CHECK(false, "feature id " << f << " outside [0, " << num_features_
                                          << ") in batch row " << r);
      }
      std::int32_t s = slot_[f];
      if (s < 0) {
        s = static_cast<std::int32_t>(unique_.size());
        slot_[f] = s;
        unique_.push_back(f);
        col_ptr_.push_back(0);
      }
      nz_slot_[p] = s;
      ++col_ptr_[s + 1];
    }
  }
  for (col_t u : unique_) slot_[u] = -1;
  const index_t u_count = size();
  for (index_t u = 0; u < u_count; ++u) col_ptr_[u + 1] += col_ptr_[u];
  // Pass 2: counting-sort placement; scanning rows in order keeps each slot's entries in row
  // order, which fixes the summation order of the gradient.
  rows_.resize(static_cast<size_t>(nnz));
  values_.resize(static_cast<size_t>(nnz));
  std::vector<index_t>& next = next_;
  next.assign(col_ptr_.begin(), col_ptr_.end() - 1);
  for (index_t r = 0; r < batch.rows(); ++r) {
    for (index_t p = batch.x_indptr[r]; p < batch.x_indptr[r + 1]; ++p) {
      const index_t q = next[nz_slot_[p]]++;
      rows_[q] = static_cast<std::int32_t>(r);
      values_[q] = batch.x_values[p];
    }
  }
}

void sparse_forward(const CsrBatch& x, const float* w0, const float* b0, index_t hidden, float* h) {
  for_blocks(x.rows(), kRowBlock, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      const index_t p = x.x_indptr[r];
      vec::gather_sum(w0, hidden, x.x_indices.data() + p, x.x_values.data() + p,
                      x.x_indptr[r + 1] - p, b0, true, h + r * hidden);
    }
  });
}

void sparse_weight_grad(const BatchFeatures& features, const float* dh, index_t hidden, float* dw) {
  const index_t* ptr = features.col_ptr();
  const std::int32_t* rows = features.rows();
  const float* vals = features.values();
  for_blocks(features.size(), kSlotBlock, [&](index_t u0, index_t u1) {
    for (index_t u = u0; u < u1; ++u) {
      vec::gather_sum(dh, hidden, rows + ptr[u], vals + ptr[u], ptr[u + 1] - ptr[u], nullptr, false,
                      dw + u * hidden);
    }
  });
}

}  // namespace hetsgd::cpu
