/// \file kernels/cpu/label_clusters.h
/// LabelClusters: an inverted-file index over the output layer's label vectors, built from the
/// weights it ranks by, for the final evaluation of a model with too many labels to score
/// every test row exactly.
///
/// Label j is the vector x_j = [W[:, j], b_j] and a row's query q = [h, 1], so q . x_j is the
/// label's logit. build() partitions the labels by k-means (squared Euclidean distance, a few
/// Lloyd iterations on a sample, then every label assigned to its nearest centroid and the
/// centroids recomputed from their members); search() ranks every cluster c by q . c plus |q|
/// times its spread (the members' RMS distance to c, scaled by how far the best of n_c of them
/// is expected to reach), takes the best few (the caller's `probes`), and scores every label of
/// those clusters exactly,
/// sgemm by sgemm. Everything is matrix products: at 670,091 labels and hidden 128 a build takes a
/// few seconds of two cores, where an HNSW graph over the same labels takes about half a minute of
/// one, and a fresh build from the evaluated weights does not go stale as the training's graph does
/// while the model moves on.
///
/// search() is cluster-major over a chunk of rows: the rows that probe a cluster are scored
/// against its labels in one sgemm, whose operands are the cluster's label vectors gathered
/// once per chunk (no second copy of the output layer is kept: W is read in place). Results
/// are deterministic for a given input and chunk whatever the thread count (parallel.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace hetsgd::cpu {

/// Sizes of the cluster index.
struct LabelClusterParams {
  index_t clusters = 0;  ///< 0 = about 1.2 x sqrt(L), at most 1,024 (and at most L)
  int iterations = 4;    ///< Lloyd iterations on the sample
  index_t sample = 0;    ///< labels the centroids are trained on (0 = 64 per cluster)
  std::uint64_t seed = 1;
};

/// Approximate top-k labels by exact logit, from the labels of each row's best clusters.
class LabelClusters {
 public:
  /// Builds over `num_labels` labels: `w` [num_labels x hidden] (row j = W[:, j]) and `b`
  /// [num_labels]. Runs in parallel in the caller's arena. The vectors are only read.
  void build(const float* w, const float* b, index_t num_labels, index_t hidden,
             const LabelClusterParams& params);

  /// For each of `rows` queries `h` ([rows x hidden]), merges the labels of its `probes`
  /// best clusters into its top-k list: `scores`/`ids` [rows x k], `size` [rows] entries
  /// already there (math::topk_insert order; a label already in a list must not be in the
  /// clusters: pass `skip` (num_labels entries, nonzero = skip) for those). `w`, `b` must be
  /// the vectors build() saw. Runs in parallel in the caller's arena.
  void search(const float* h, index_t rows, const float* w, const float* b, int k, int probes,
              const std::uint8_t* skip, float* scores, col_t* ids, int* size) const;

  bool ready() const { return clusters_ > 0; }
  index_t clusters() const { return clusters_; }
  /// Labels of cluster c, and its size.
  const col_t* members(index_t c) const { return ids_.data() + offsets_[c]; }
  index_t cluster_size(index_t c) const { return offsets_[c + 1] - offsets_[c]; }

 private:
  /// search() of `rows` rows in one pass, `np` probes each.
  void search_block(const float* h, index_t rows, const float* w, const float* b, int k, index_t np,
                    const std::uint8_t* skip, float* scores, col_t* ids, int* size) const;

  index_t hidden_ = 0;
  index_t clusters_ = 0;
  std::vector<float> centroids_;  ///< [clusters x (hidden + 1)]
  std::vector<float> spread_;     ///< [clusters] r_c sqrt(2 ln n_c / (hidden + 1)) (search())
  std::vector<index_t> offsets_;  ///< cluster c holds ids_[offsets_[c], offsets_[c + 1])
  std::vector<col_t> ids_;        ///< labels, cluster by cluster
};

}  // namespace hetsgd::cpu
