/// \file tests/common/topic_rows.h
/// Rows of small "topic" data sets: each topic owns 8 features, and a row of a topic holds 3
/// of them, so a model can learn its topic's labels from its features.
#pragma once

#include <algorithm>
#include <vector>

#include "core/dataset.h"
#include "core/random.h"

namespace hetsgd::test {

/// Appends to `d` a row of topic `g`: 3 distinct features of 8g..8g+7 drawn by `rng` (value 1,
/// sorted), and the labels `labels` in that order.
inline void add_topic_row(Dataset& d, col_t g, SplitMix64& rng, const std::vector<col_t>& labels) {
  std::vector<col_t> f;
  while (f.size() < 3) {
    const col_t c = 8 * g + static_cast<col_t>(rng() % 8);
    if (std::find(f.begin(), f.end(), c) == f.end()) f.push_back(c);
  }
  std::sort(f.begin(), f.end());
  for (col_t c : f) {
    d.x_indices.push_back(c);
    d.x_values.push_back(1.0f);
  }
  d.x_indptr.push_back(d.nnz());
  d.y_indices.insert(d.y_indices.end(), labels.begin(), labels.end());
  d.y_indptr.push_back(d.label_nnz());
}

}  // namespace hetsgd::test
