/// \file core/forest/tree_builder.h
/// ForestBuilder: grows one tree of a LabelForest (core/forest/README.md, "The trees"). Used by
/// LabelForest::grow() only, one builder per thread, reused tree after tree (its buffers span
/// every row, feature or label: made once a thread, not once a tree).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/forest/label_forest.h"
#include "core/random.h"

namespace hetsgd {

/// Grows one tree at a time into a forest of its own; grow() appends them in tree order.
class ForestBuilder {
 public:
  ForestBuilder(const Dataset& data, const ForestOptions& o, const std::vector<float>& inv_norm)
      : data_(data), o_(o), inv_norm_(inv_norm), n_(data.rows()), d_(data.num_features) {}

  /// Tree t. Empty (no root) where `halt` becomes true before it is done (read per node).
  LabelForest tree(int t, const std::atomic<bool>* halt = nullptr);

 private:
  float uniform() { return uniform01(rng_seed_, counter_++); }

  // P[i] = the unit-length sum of a Gaussian vector per label of row i (0 for no label).
  void project_labels();

  static void normalise(float* v, size_t n);

  const float* p(index_t row) const {
    return P_.data() + static_cast<size_t>(row) * static_cast<size_t>(o_.label_dims);
  }
  // Spherical k-means of the sample's label projections; returns each sample row's cluster.
  std::vector<int> kmeans(const index_t* sample, index_t s, int k);

  // Clusters rows[0..n) by labels, routes them by feature centroids, reorders them by child
  // and appends the children's nodes; `ends` gets each child's end offset. False (nothing
  // appended) when the routing leaves every row in one child.
  bool split(LabelForest* f, index_t* rows, index_t n, std::vector<index_t>* ends);

  // acc_[f * arity + j] = the unit-length mean of the unit-length feature rows rows[i] with
  // assign[i] == j (i < n), keeping its `centroid_nnz` largest entries when that is set;
  // norm[j] = 0 for a cluster with no feature. feat_touched_ lists the features held.
  void centroids(const index_t* rows, index_t n, const std::vector<int>& assign,
                 std::vector<double>* norm);

  // Keeps each centroid's `centroid_nnz` largest entries (when set) and scales it to unit
  // length; norm[j] = its squared length before (0: no feature). kept_[j] lists child j's
  // entries, in feature order.
  void finish_centroids(std::vector<double>* norm);

  // route[i] = the child whose centroid has the largest dot product with rows[i] (a cluster
  // without features takes none; ties go to the lowest); size[j] counts the rows of child j.
  void route_rows(const index_t* rows, index_t n, const std::vector<double>& norm,
                  std::vector<int>* route, std::vector<index_t>* size) const;

  void make_leaf(LabelForest* f, std::int32_t node, const index_t* rows, index_t n);

  const Dataset& data_;
  const ForestOptions& o_;
  const std::vector<float>& inv_norm_;
  index_t n_, d_;
  std::uint64_t rng_seed_ = 0, counter_ = 0;
  std::vector<float> R_, P_, acc_;  // R: a Gaussian vector per label
  std::vector<float> kx_;           // kmeans(): its sample's projections
  std::vector<index_t> counts_, scratch_;
  std::vector<col_t> touched_, feat_touched_;  // labels of a leaf, features of a split
  std::vector<std::uint8_t> feat_mark_;        // 1 while a feature is in feat_touched_
  // finish_centroids(): each child's entries.
  struct Entry {
    float magnitude;
    col_t feature;
    float value;
  };
  std::vector<std::vector<Entry>> kept_;
  LabelForest work_;  // the tree being grown (tree())
};

}  // namespace hetsgd
