/// \file kernels/cpu/approx_scorer.h
/// ApproxScorer: a CPU replica's approximate top-k, for models with too many labels to score
/// every row exactly: `hetsgd predict --ann` (an HNSW label index over the output layer, each
/// row's neighbours rescored exactly) and the final evaluation of an extreme model (the labels
/// of largest bias and the labels of each row's best k-means LabelClusters, all scored
/// exactly with the current weights).
///
/// Its caches (the label index, the clusters, the gathered head) are derived from the
/// parameters and stamped with the VersionedParams::version() they were built at. A call at
/// another version drops them all and builds what it needs from the current weights, so every
/// write of the parameters (an optimiser step, a write of the whole buffer, a row-sparse write
/// or an in-place merge through the row exchange) is seen, and no writer knows of the caches.
/// Calls run inside the device's arena, from the device's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/types.h"
#include "kernels/cpu/label_clusters.h"
#include "kernels/cpu/shortlist.h"
#include "kernels/cpu/versioned_params.h"

namespace hetsgd::cpu {

class ApproxScorer {
 public:
  /// For `config`'s model of `layout` (both must outlive it), on `threads` threads.
  ApproxScorer(const ModelConfig& config, const ParamLayout& layout, int threads);

  /// The top `k` of each of `rows` rows among the `k` labels the label index returns for its
  /// last hidden activations (`h`, [rows x hidden]), scored exactly with `params`; lists the
  /// index fills short end in (-1, -inf). The index is built from `params` when it has none of
  /// their version.
  void ann_topk(const VersionedParams& params, const float* h, index_t rows, int k, col_t* labels,
                float* scores);
  /// The top `k` of each row among the `head` labels of largest bias and the labels of its
  /// `probes` best clusters, scored exactly with `params` (lists end in (-1, -inf) when those
  /// hold fewer than k). The clusters (a few seconds at 670,091 labels) and the head are built
  /// when there are none of `params`' version; building the clusters first releases the
  /// `training` shortlist's index (when given: Shortlist::release_index()).
  void clustered_topk(const VersionedParams& params, const float* h, index_t rows, int k,
                      index_t head, int probes, Shortlist* training, col_t* labels, float* scores);

 private:
  // The labels of largest bias and their weights, gathered for the clustered evaluation.
  struct HeadLabels {
    std::vector<col_t> ids;
    std::vector<std::uint8_t> member;  ///< label -> 1 when in `ids`
    std::vector<float> w;              ///< [ids x hidden], row i = W_out[ids[i], :]
    std::vector<float> b;
  };

  /// Drops every cache unless it was built at `params`' version.
  void sync(const VersionedParams& params);
  /// Gathers the `count` labels of largest bias of `w`, `b` (head_), unless they are there.
  void prepare_head(const float* w, const float* b, index_t count);
  /// Merges the head_ labels' exact scores for `rows` hidden rows `h` into the top-k lists
  /// (`size` entries each).
  void score_head(const float* h, index_t rows, int k, col_t* labels, float* scores,
                  int* size) const;

  const ModelConfig& config_;
  const LayerSlice out_;  ///< the output layer
  int threads_;
  std::uint64_t version_ = 0;                ///< the parameters' version the caches describe
  std::unique_ptr<Shortlist> ann_;           ///< the label index of ann_topk()
  std::unique_ptr<HeadLabels> head_;         ///< the head of clustered_topk()
  std::unique_ptr<LabelClusters> clusters_;  ///< its clusters
};

}  // namespace hetsgd::cpu
