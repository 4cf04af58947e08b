/// \file kernels/cpu/label_index.h
/// LabelIndex: an approximate maximum-inner-product index over the output layer's label
/// vectors, for the shortlist's hard negatives and `predict --ann`.
///
/// Wraps hnswlib's HNSW graph (Debian libhnswlib-dev, header-only) with its inner-product
/// space. Label j is stored as the vector [W[:, j], b_j] of width hidden + 1 and queried with
/// [h, 1], so the inner product is exactly the label's logit h . W[:, j] + b_j.
///
/// Threads: build() is single-threaded and deterministic for a given input (fixed level seed);
/// search() may be called from many threads at once on a built index.
#pragma once

#include <memory>
#include <vector>

#include "core/types.h"

namespace hetsgd::cpu {

/// HNSW build and search parameters (see ShortlistConfig).
struct LabelIndexParams {
  int m = 12;                ///< graph degree
  int ef_construction = 40;  ///< candidate list while building
  int ef_search = 48;        ///< candidate list per query
};

/// Approximate top-k labels by logit.
class LabelIndex {
 public:
  LabelIndex();
  ~LabelIndex();
  LabelIndex(const LabelIndex&) = delete;
  LabelIndex& operator=(const LabelIndex&) = delete;

  /// Builds the index over `num_labels` labels of width `hidden` from `vectors`
  /// ([num_labels x (hidden + 1)], row j = [W[:, j], b_j]). Replaces any earlier index.
  void build(const float* vectors, index_t num_labels, index_t hidden,
             const LabelIndexParams& params);

  /// True once build() has completed.
  bool ready() const { return num_labels_ > 0; }
  index_t num_labels() const { return num_labels_; }
  index_t hidden() const { return hidden_; }

  /// The approximately `k` best labels for hidden activation `h` (`hidden` floats), best
  /// first, into `ids` (resized to min(k, num_labels)). `scratch` holds hidden + 1 floats.
  void search(const float* h, int k, std::vector<col_t>* ids, std::vector<float>* scratch) const;

  /// Bytes held by the graph and its stored vectors (an estimate for memory reports).
  std::size_t bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  index_t num_labels_ = 0;
  index_t hidden_ = 0;
};

}  // namespace hetsgd::cpu
