/// \file kernels/cpu/shortlist.h
/// Shortlist: picks each shortlisted step's candidate labels and keeps the label index fresh.
///
/// Candidates of a batch (ShortlistConfig): its positive labels, the `hard_negatives` labels
/// of highest approximate logit for each row (LabelIndex over the output layer's label
/// vectors, queried with the row's last hidden activations), and `sampled_negatives` uniform
/// draws (deduplicated). Positives and hard negatives have weight 1; the u uniform-only
/// candidates stand for the L - f labels that are not fixed, so each gets the ratio weight
/// (L - f) / u (exactly 1 when every label is a candidate; sampled_negatives >= L makes every
/// label one). Draws come from a counter-based generator keyed by (seed, step), so the set is
/// a pure function of the model state, the batch and the step.
///
/// Index refresh: at every step that is a positive multiple of `rebuild_steps`, when no build
/// is running, the label vectors are coded (LabelIndex::encode, a [L x (hidden + 5)]-byte
/// snapshot) and a new index is built from them by a background thread, while training keeps
/// using the previous index. The build's result is swapped in at a later multiple:
/// - with ShortlistConfig::wait_for_index (deterministic runs), at the next multiple, waiting
///   for the build if it is not done, so step s uses the index of the weights at step
///   rebuild_steps * (floor(s / rebuild_steps) - 1) whatever the timing;
/// - otherwise at the first multiple where the build has finished, so training never waits
///   for it (at 670,091 labels a build takes longer than 500 steps on two cores); the next
///   build starts at the first multiple after that where builds have run at most
///   ShortlistConfig::index_duty of the time since the previous one finished.
/// The builder thread runs at a lower priority (nice 10 on Linux) than training.
/// Before the first swap there are no hard negatives. Destruction cancels a running build.
/// Not thread-safe; one per device.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include <thread>

#include "core/dataset.h"
#include "core/model_config.h"
#include "kernels/cpu/label_index.h"
#include "kernels/cpu/output_layer.h"

namespace hetsgd::cpu {

class Shortlist {
 public:
  /// Prepares for `config` (allocates the L-entry label -> slot map).
  explicit Shortlist(const ModelConfig& config);
  ~Shortlist();
  Shortlist(const Shortlist&) = delete;
  Shortlist& operator=(const Shortlist&) = delete;

  /// Index refresh at optimiser step `step` (see the file comment); `w` [hidden x L] and `b`
  /// [L] are the current output weights. Call before select() of that step, inside the
  /// device's arena.
  void refresh(std::int64_t step, const float* w, const float* b);

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
  void wait();
  /// Index swaps so far (each puts a newer index in use).
  std::int64_t swaps() const { return swaps_; }

 private:
  /// Codes the label vectors of `w`, `b` into snapshot_.
  void snapshot(const float* w, const float* b);
  /// Starts the background build of next_ from snapshot_.
  void start_build();

  index_t num_labels_;
  index_t hidden_;
  std::uint64_t seed_;
  ShortlistConfig cfg_;
  LabelIndexParams params_;
  std::vector<std::int32_t> slot_;  ///< label -> candidate slot, -1 when absent
  std::vector<std::uint8_t> kind_;  ///< scratch: 1 fixed, 2 uniform-only (per candidate)
  std::vector<col_t> hard_;         ///< [rows x hard_negatives] query results
  CandidateSet cand_;
  std::unique_ptr<LabelIndex> index_;
  std::unique_ptr<LabelIndex> next_;
  std::vector<std::uint8_t> snapshot_;  ///< coded label vectors the background build reads
  /// The background build. A plain thread rather than a TBB task: a TBB arena only gets
  /// workers the global pool can spare, and while the training arena holds them all the build
  /// would not start before the next swap point waited for it.
  std::thread builder_;
  std::atomic<bool> build_done_{false};  ///< the running build has finished (or failed)
  std::atomic<bool> cancel_{false};      ///< asks the running build to stop (destruction)
  std::exception_ptr build_error_;
  std::int64_t swaps_ = 0;
  using Clock = std::chrono::steady_clock;
  // Written by the builder before build_done_ is set, read by refresh() after it joined.
  Clock::time_point build_end_;
  double last_build_s_ = 0.0;  ///< wall time of the last finished build (0: none yet)
};

}  // namespace hetsgd::cpu
