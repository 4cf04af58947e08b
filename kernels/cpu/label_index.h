/// \file kernels/cpu/label_index.h
/// LabelIndex: an approximate maximum-inner-product index over the output layer's label
/// vectors, for the shortlist's hard negatives and `predict --ann`.
///
/// Wraps hnswlib's HNSW graph (Debian libhnswlib-dev, header-only) over a space of our own:
/// label j is the vector [W[:, j], b_j] of width hidden + 1, stored as int8 codes with one
/// float scale (max |x| / 127), and queried with [h, 1] coded the same way, so the inner
/// product approximates the label's logit h . W[:, j] + b_j. The codes are a quarter of the
/// floats' memory and bandwidth, which is what a graph walk over 670,091 labels is bound by;
/// their products sum exactly in int32, so every ISA builds the same graph. Candidates are
/// rescored exactly by their users, so the coding only perturbs which labels come back.
///
/// Threads: build() is single-threaded and deterministic for a given input (fixed level seed);
/// search() may be called from many threads at once on a built index.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/types.h"

namespace hetsgd::cpu {

/// HNSW build and search parameters (see ShortlistConfig).
struct LabelIndexParams {
  int m = 8;                 ///< graph degree
  int ef_construction = 16;  ///< candidate list while building
  int ef_search = 16;        ///< candidate list per query
};

/// Approximate top-k labels by logit.
class LabelIndex {
 public:
  LabelIndex();
  ~LabelIndex();
  LabelIndex(const LabelIndex&) = delete;
  LabelIndex& operator=(const LabelIndex&) = delete;

  /// Bytes of one coded vector of `width` floats: a float scale, then `width` int8 codes and
  /// zeros up to a multiple of 8. hnswlib stores each label as [links (8M + 4 bytes)][code]
  /// [8-byte id] back to back, so a code of 4 mod 8 bytes keeps every record's links, scale
  /// and id aligned.
  static std::size_t code_bytes(index_t width) {
    return sizeof(float) + (static_cast<std::size_t>(width) + 7) / 8 * 8;
  }
  /// Codes `x[0..width)` into `out` (code_bytes(width) bytes).
  static void encode(const float* x, index_t width, std::uint8_t* out);

  /// Builds the index over `num_labels` coded label vectors of width `hidden + 1` (`codes`,
  /// [num_labels x code_bytes(hidden + 1)]). Replaces any earlier index. When `cancel` becomes
  /// true the build stops early and returns false (the index is then not ready()). With `ids`
  /// (num_labels entries) code i is label ids[i], and search() returns those ids: an index over
  /// a subset of the labels.
  bool build(const std::uint8_t* codes, index_t num_labels, index_t hidden,
             const LabelIndexParams& params, const std::atomic<bool>* cancel = nullptr,
             const col_t* ids = nullptr);
  /// The same from float vectors ([num_labels x (hidden + 1)], row j = [W[:, j], b_j]).
  void build(const float* vectors, index_t num_labels, index_t hidden,
             const LabelIndexParams& params);

  /// A build in two parts without a separate copy of the codes: stage() allocates the graph
  /// for `num_labels` labels of width hidden + 1 and empties the index (not ready()); the
  /// caller writes code j (code_bytes(hidden + 1) bytes) at staged_code(j) for every j; then
  /// build_staged() inserts them in order, as build() would insert the same codes (the same
  /// graph). The codes wait in the graph's own label records, which keep them anyway: a
  /// build over 670,091 labels at hidden 128 then needs no 94 MB snapshot beside the graph.
  void stage(index_t num_labels, index_t hidden, const LabelIndexParams& params);
  /// Where code j goes between stage() and build_staged().
  std::uint8_t* staged_code(index_t j);
  /// Inserts the staged codes; `cancel` and `ids` as for build().
  bool build_staged(const std::atomic<bool>* cancel = nullptr, const col_t* ids = nullptr);

  /// True once build() has completed.
  bool ready() const { return num_labels_ > 0; }
  index_t num_labels() const { return num_labels_; }
  index_t hidden() const { return hidden_; }

  /// The approximately `k` best labels for hidden activation `h` (`hidden` floats), best
  /// first, into `ids` (resized to min(k, num_labels)). `scratch` is the query's buffer.
  void search(const float* h, int k, std::vector<col_t>* ids,
              std::vector<std::uint8_t>* scratch) const;

  /// Bytes held by the graph and its stored codes (an estimate for memory reports).
  std::size_t bytes() const;
  /// Bytes a built index over `num_labels` labels of width `hidden` holds (for memory
  /// estimates).
  static std::size_t estimate_bytes(index_t num_labels, index_t hidden, int m);
  /// Bytes an index being built holds on top of estimate_bytes(): hnswlib's per-label
  /// insertion locks, freed when the build ends (the label hash is kept to a few entries).
  static std::size_t build_extra_bytes(index_t num_labels);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  index_t num_labels_ = 0;
  index_t hidden_ = 0;
};

}  // namespace hetsgd::cpu
