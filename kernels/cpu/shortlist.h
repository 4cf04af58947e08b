/// \file kernels/cpu/shortlist.h
/// Shortlist: picks each shortlisted step's candidate labels and keeps the label index fresh.
///
/// Candidates of a batch (ShortlistConfig): its positive labels (of a row with more than
/// `max_positives`, that many drawn anew each step; CandidateSet::label_used marks them), the
/// `hard_negatives` labels of highest approximate logit for each row (LabelIndex over the output
/// layer's label vectors, queried with the row's last hidden activations), and `sampled_negatives`
/// uniform draws (deduplicated). Positives and hard negatives have weight 1; the u uniform-only
/// candidates stand for the L - f labels that are not fixed, so each gets the ratio weight
/// (L - f) / u (exactly 1 when every label is a candidate; sampled_negatives >= L makes every
/// label one). Draws come from a counter-based generator keyed by (seed, step), so the set is
/// a pure function of the model state, the batch and the step.
///
/// Index schedule: builds start and their indexes are installed at optimiser steps fixed by
/// the data and the options, never by timing, so a run on one device is the same whatever the
/// machine's load. At a rebuild point (a positive multiple of `rebuild_steps`) with no build
/// pending and the previous build's period over, a build starts from the current weights
/// (IndexBuilder), and its index is installed `lag` steps later, after waiting for it if it
/// is not done; training keeps using the index it has meanwhile. The next build may start
/// `period` steps after this one. Both are whole rebuild intervals:
/// - with ShortlistConfig::wait_for_index, one interval each: step s uses the index of the
///   weights at step rebuild_steps * (floor(s / rebuild_steps) - 1);
/// - otherwise from expected_build_steps() E, the build's expected duration in steps of
///   training: lag 3 E (a margin for a builder that gets less of the machine) and
///   period E / ShortlistConfig::index_duty (builds run about that fraction of the steps), at
///   least the lag. On 2 threads, at 670,091 labels and 128 rows a full build is expected to
///   take about 11,000 steps, one over 22,912 labels about 50. Such shortlists
///   may share one builder (share_builder(): every CPU replica of a process): one build at a
///   time serves them all, each installing the newest index at its own install steps.
/// Before the first swap there are no hard negatives. The first build covers only the labels
/// seen as positives so far, when they are fewer than half of L: at 670,091 labels a full build
/// takes longer than a one-epoch run's training, while the at most 69,000 positives of the
/// first 100 steps of 128 rows cost about a tenth of it, and the labels that have been trained
/// are those whose logits can be high. The builds after it cover every label. Not thread-safe;
/// one per device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "kernels/cpu/index_builder.h"
#include "kernels/cpu/label_index.h"
#include "kernels/cpu/output_layer.h"

namespace hetsgd::cpu {

class Shortlist {
 public:
  /// Prepares for `config` (allocates the L-entry label -> slot map and its own builder);
  /// `threads` is the device's, which run the training steps (it sizes the index schedule).
  Shortlist(const ModelConfig& config, int threads);
  Shortlist(const Shortlist&) = delete;
  Shortlist& operator=(const Shortlist&) = delete;

  /// The index schedule at optimiser step `step` (see the file comment): installs a pending
  /// build's index at its install step and starts builds; `w` [L x hidden] and `b` [L] are
  /// the current output weights, `batch` the step's (it sizes the schedule). Call before
  /// select() of that step, inside the device's arena.
  void refresh(std::int64_t step, const float* w, const float* b, const CsrBatch& batch);
  /// The expected duration of a build over `labels` labels, in optimiser steps of `batch`'s
  /// size: the insertions' work against the output layer's work of a step (the batch's
  /// positives, its rows' hard negatives and the sampled negatives as candidates).
  double expected_build_steps(index_t labels, const CsrBatch& batch) const;

  /// Candidates of `batch` at `step` from `h` ([rows x hidden], the last hidden activations).
  /// Runs the index queries row-parallel in the caller's arena.
  const CandidateSet& select(const CsrBatch& batch, const float* h, std::int64_t step);

  /// The last select()'s candidates.
  const CandidateSet& candidates() const { return cand_; }
  /// The index in use (not ready() before the first swap).
  const LabelIndex& index() const { return *index_; }
  /// Builds the index from `w`, `b` now, synchronously, and uses it from the next select()
  /// on (for prediction with `--ann` and tests).
  void build_now(const float* w, const float* b);
  /// Waits for a background build, if one runs, and rethrows its error, if it failed.
  void wait() { builder_->wait(); }
  /// Stops a running build and drops the index in use and the builder's latest: their memory
  /// goes; hard negatives return after the next build (refresh() starts one at the next
  /// rebuild point).
  void release_index();
  /// Index swaps so far (each puts a newer index in use).
  std::int64_t swaps() const { return swaps_; }
  /// True when this shortlist may share its builder (it does not wait for builds).
  bool can_share_builder() const { return !cfg_.wait_for_index; }
  /// The builder this shortlist uses.
  const std::shared_ptr<IndexBuilder>& builder() const { return builder_; }
  /// Uses `builder` (made for the same model shape) from now on; can_share_builder() must
  /// hold.
  void share_builder(std::shared_ptr<IndexBuilder> builder);

 private:
  // Fills cand_.label_used for `batch` at `step` (left empty when no row has more labels than
  // max_positives).
  void choose_positives(const CsrBatch& batch, std::int64_t step);

  index_t num_labels_;
  int threads_;  ///< the device's training threads (the schedule's steps run on them)
  index_t hidden_;
  std::uint64_t seed_;
  ShortlistConfig cfg_;
  std::vector<std::int32_t> slot_;  ///< label -> candidate slot, -1 when absent
  std::vector<std::uint8_t> kind_;  ///< scratch: 1 fixed, 2 uniform-only (per candidate)
  std::vector<std::uint64_t> order_, order_scratch_;  ///< scratch: id << 8 | kind, sorted
  std::vector<col_t> hard_;                           ///< [rows x hard_negatives] query results
  std::vector<std::int32_t> pick_;  ///< scratch: a row's label entries, partially shuffled
  std::vector<std::uint8_t> seen_;  ///< label -> 1 once it was a positive (first build only)
  std::vector<col_t> seen_ids_;     ///< those labels, in order of first appearance
  bool started_ = false;            ///< a build was started (the first covers seen_ids_)
  std::int64_t pending_ = 0;        ///< the builder's ticket of the build to install (0: none)
  std::int64_t install_at_ = 0;     ///< the step at which it is installed
  std::int64_t next_start_ = 0;     ///< the first step at which the next build may start
  CandidateSet cand_;
  std::shared_ptr<const LabelIndex> index_;  ///< in use; may be shared with other replicas
  std::shared_ptr<IndexBuilder> builder_;
  std::int64_t swaps_ = 0;
};

}  // namespace hetsgd::cpu
