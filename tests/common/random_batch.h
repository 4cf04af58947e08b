/// \file tests/common/random_batch.h
/// Pieces of the random CSR batches that the CPU device tests draw.
#pragma once

#include <algorithm>
#include <vector>

#include "core/dataset.h"
#include "core/random.h"

namespace hetsgd::test {

/// A batch of no rows over `features` features and `labels` labels.
inline CsrBatch empty_batch(index_t features, index_t labels) {
  CsrBatch b;
  b.num_features = features;
  b.num_labels = labels;
  return b;
}

/// `draws` ids drawn by `rng` from [0, bound), sorted, repeats dropped.
inline std::vector<col_t> draw_ids(SplitMix64& rng, int draws, index_t bound) {
  std::vector<col_t> ids;
  for (int i = 0; i < draws; ++i) ids.push_back(static_cast<col_t>(rng() % bound));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

/// Opens row `b.rows()` of `b` with features `fs`, each of value `base` + a uniform draw of
/// `rng` in [0, 1); the row's labels follow with close_row().
inline void open_row(CsrBatch& b, const std::vector<col_t>& fs, float base, SplitMix64& rng) {
  for (col_t f : fs) {
    b.x_indices.push_back(f);
    b.x_values.push_back(base + rng.uniform());
  }
  b.x_indptr.push_back(static_cast<index_t>(b.x_indices.size()));
}

/// Ends the row that open_row() began with the labels `ls` (none: a row without labels).
inline void close_row(CsrBatch& b, const std::vector<col_t>& ls) {
  b.y_indices.insert(b.y_indices.end(), ls.begin(), ls.end());
  b.y_indptr.push_back(static_cast<index_t>(b.y_indices.size()));
}

}  // namespace hetsgd::test
