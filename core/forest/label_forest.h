/// \file core/forest/label_forest.h
/// A forest of label-clustering trees, scored beside the network (core/forest/README.md).
///
/// Each tree splits the training rows recursively: a node's rows are clustered by their label
/// sets (spherical k-means on a random projection of each row's label indicator vector, so the
/// trees differ), and each cluster's mean L2-normalised feature row becomes the centroid that
/// routes a row to that child (the child whose centroid has the largest dot product with it).
/// Training rows are routed the same way, so a leaf holds the rows a test row would land
/// beside; it stores the frequency of each label among them. A row's forest score for label l
/// is the mean over trees of l's frequency in the leaf the row reaches: a nearest-neighbour
/// vote whose neighbourhoods are chosen by the labels, as in tree ensembles of extreme
/// classification (FastXML, CRAFTML).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dataset.h"
#include "core/label_scores.h"

namespace hetsgd {

class LabelForest;

/// Trees grown to weigh one before a byte budget (ForestOptions::max_bytes) sets the count.
inline constexpr int kBudgetProbeTrees = 2;

/// How a forest is grown. The defaults were chosen on validation data (core/forest/README.md).
struct ForestOptions {
  int trees = 100;             ///< trees of the forest
  int arity = 10;              ///< most children of a split (the k of its k-means)
  index_t leaf_rows = 10;      ///< a node of at most this many rows is a leaf
  int label_dims = 100;        ///< width of the random projection of the label vectors
  int kmeans_iters = 10;       ///< Lloyd iterations of each split's k-means
  index_t kmeans_rows = 4096;  ///< rows of a node its k-means sees at most (a random sample)
  int max_depth = 40;          ///< a node this deep is a leaf
  int route_iters = 0;         ///< passes recentring the routing centroids on the routed rows
  int leaf_labels = 30;        ///< most labels a leaf keeps, its most frequent (0 = all)
  int centroid_nnz = 32;       ///< most features a routing centroid keeps (0 = all)
  bool idf = true;             ///< weigh features by their idf among the rows before routing
  int threads = 0;             ///< threads growing trees at once (0 = all)
  std::uint64_t seed = 1;      ///< the same seed and data grow the same forest
  /// 0: `trees` trees. Else the first trees (seed order) whose bytes() fit in this many, at
  /// most `trees`: the first kBudgetProbeTrees are grown to weigh a tree, then the rest.
  std::int64_t max_bytes = 0;
  /// A pilot of this share of the forest's trees (at least `pilot_min`; 0 = none): once the
  /// forest's first trees (seed order) are grown, `go_on` sees them and the forest's final tree
  /// count, and false ends the growth with no forest. Going on grows the rest, so the forest is
  /// the one grown without a pilot.
  double pilot_share = 0.0;
  int pilot_min = 1;
  std::function<bool(const LabelForest& first, int trees)> go_on;
  /// Throws InvalidArgument naming the field when a value is out of its range.
  void validate() const;
};

/// A grown forest: flat arrays of nodes, routing centroids and leaf label frequencies.
class LabelForest {
 public:
  /// Grows a forest on `train` (rows with no label are used for routing only). Trees grow in
  /// parallel (oneTBB). Returns an empty forest when `stop` becomes true first, or when the
  /// pilot's `go_on` says no (ForestOptions::pilot). Within
  /// ForestOptions::max_bytes it may hold fewer trees than asked, none (empty()) when not
  /// even one fits.
  /// `ahead` holds trees 0, 1, .. grown beforehand by grow_ahead() from the same rows and
  /// options: they are taken as they are (those past the forest's count are dropped), so the
  /// forest is the same with or without them.
  static LabelForest grow(const Dataset& train, const ForestOptions& options,
                          const std::atomic<bool>* stop = nullptr,
                          std::vector<LabelForest> ahead = {});
  /// Trees 0, 1, .. (at most `limit`) of the forest grow() makes from `train` and `options`,
  /// each a forest of one tree, grown one after another on the calling thread until `halt`
  /// becomes true (read before each tree) or, with options.max_bytes, until they weigh more
  /// than it (grow() keeps none past it).
  static std::vector<LabelForest> grow_ahead(const Dataset& train, const ForestOptions& options,
                                             int limit, const std::atomic<bool>& halt);

  bool empty() const { return roots_.empty(); }
  int trees() const { return static_cast<int>(roots_.size()); }
  index_t num_features() const { return num_features_; }
  index_t num_labels() const { return num_labels_; }
  /// Nodes over all trees (leaves included).
  index_t nodes() const { return static_cast<index_t>(nodes_.size()); }

  /// Row r's forest scores, normalised to sum to 1 over the labels, for each row r of `rows`:
  /// (*scores)[r] lists the labels the row's leaves name (every other label scores 0; none
  /// for a row whose leaves hold no label). Feature ids at or above num_features() are
  /// ignored. Thread-safe.
  void scores(const CsrBatch& rows, LabelScoreRows* scores) const;
  /// The `k` labels of each row of `rows` with the highest forest scores (any score above 0),
  /// highest first, ties to the lower label, -1 past the last: rows x k ids in `labels`.
  /// Only the labels the row's leaves hold are visited, so it costs the leaves, not L.
  void top_labels(const CsrBatch& rows, int k, std::vector<col_t>* labels) const;

  /// Appends the forest's bytes (little-endian, fixed-width fields) to `out`.
  void serialize(std::string* out) const;
  /// The number of bytes serialize() appends.
  std::int64_t bytes() const;
  /// Reads a forest written by serialize() for a model of `num_features` x `num_labels`;
  /// every index is range-checked (children after their parent, ids below their bounds,
  /// weights finite), so a damaged file fails here, naming `name`, not during scoring.
  static LabelForest parse(std::string_view bytes, index_t num_features, index_t num_labels,
                           const std::string& name);

  /// One node. A split lists its children contiguously from `first_child`; every node but a
  /// root carries the centroid its parent routes by; a leaf carries its label frequencies.
  struct Node {
    std::int32_t first_child = 0;
    std::int32_t children = 0;                          ///< 0: a leaf
    std::int64_t centroid_begin = 0, centroid_end = 0;  ///< into centroid_ids_ / _values_
    std::int64_t leaf_begin = 0, leaf_end = 0;          ///< into leaf_labels_ / _weights_
  };

 private:
  friend class ForestBuilder;
  /// The leaf a row reaches from `root`; x holds its weighted features, dense.
  const Node& leaf_of(std::int32_t root, const float* x) const;
  /// For each row of `rows` (in parallel), emit(r, labels, sums, total) with the labels its
  /// leaves name (each once; emit may reorder them), their summed leaf weights by label id
  /// and the sum of all; defined in label_forest.cpp, the one file that calls it.
  template <typename Emit>
  void each_row_leaves(const CsrBatch& rows, const Emit& emit) const;
  /// Appends the first `count` of `trees` (each grown alone), shifting their offsets; with
  /// `release`, each is emptied once copied.
  void append_trees(std::vector<LabelForest>* trees, int count, bool release);
  index_t num_features_ = 0;
  index_t num_labels_ = 0;
  std::vector<std::int32_t> roots_;
  std::vector<Node> nodes_;
  std::vector<col_t> centroid_ids_;
  std::vector<float> centroid_values_;
  std::vector<col_t> leaf_labels_;
  std::vector<float> leaf_weights_;
  std::vector<float> feature_weights_;  ///< idf per feature (empty: none)
};

}  // namespace hetsgd
