/// \file core/engine/batch_policy.h
/// Per-device batch sizes of Adaptive SGD and how they change after each round
/// (core/engine/README.md §Adaptive SGD).
///
/// Aim: every device performs the same number of updates per round, so that no replica's
/// contribution to the merge is stale. `paper` walks b_i by +-step towards that fixed point;
/// `proportional` jumps to it from each device's smoothed throughput; `fixed` keeps b0.
/// Devices are addressed by slot (their index in the engine's device list); failed slots stay
/// in the vectors with `active == false` and keep their last size.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "core/engine/train_options.h"
#include "core/types.h"

namespace hetsgd {

/// `paper` step: with p_i = n_i / sum n over active slots and K active slots,
/// b_i -= step if p_i < 1/K and b_i > b_min; b_i += step if p_i > 1/K and b_i < b_max
/// (results clamped to [b_min, b_max]). Inactive slots are returned unchanged.
std::vector<index_t> paper_batch_sizes(const std::vector<index_t>& current,
                                       const std::vector<index_t>& updates,
                                       const std::vector<bool>& active, index_t b_min,
                                       index_t b_max, index_t step);
/// The same step against a job's totals: `total_updates` over its `total_active` slots (these
/// slots and other nodes' together).
std::vector<index_t> paper_batch_sizes(const std::vector<index_t>& current,
                                       const std::vector<index_t>& updates,
                                       const std::vector<bool>& active, index_t b_min,
                                       index_t b_max, index_t step, double total_updates,
                                       int total_active);

/// `proportional`: b_i = clamp(round(total * r_i / sum r), b_min, b_max) over active slots,
/// r_i = throughput in points/s. A slot with r_i <= 0 (not measured yet) keeps `current`.
std::vector<index_t> proportional_batch_sizes(const std::vector<index_t>& current,
                                              const std::vector<double>& rates,
                                              const std::vector<bool>& active, index_t total,
                                              index_t b_min, index_t b_max);
/// The same against a job's total measured rate `rate_sum` (these slots and other nodes').
std::vector<index_t> proportional_batch_sizes(const std::vector<index_t>& current,
                                              const std::vector<double>& rates,
                                              const std::vector<bool>& active, index_t total,
                                              index_t b_min, index_t b_max, double rate_sum);

/// Sums `n` doubles over the nodes of a job in place (collective), so that the policies see
/// every node's devices: NodeGroup::sum across servers; null on one node.
using NodeSum = std::function<void(double* values, int n)>;

/// The batch-size state of one run: current b_i and the EMA r_i of each device's throughput.
class BatchSizer {
 public:
  /// `num_slots` devices, all starting at the warm-up batch size (or the policy's start when
  /// there is no warm-up).
  BatchSizer(const TrainOptions& options, int num_slots);

  /// Current batch size of every slot.
  const std::vector<index_t>& sizes() const { return sizes_; }
  /// Smoothed throughput (points/s) of every slot; 0 until measured.
  const std::vector<double>& throughput() const { return rates_; }

  /// Folds one round into the state: `samples[i]` points trained in `busy_s[i]` seconds of
  /// compute, `updates[i]` steps. `warmup` tells whether the run is still warming up (sizes
  /// stay at the warm-up size); the first call with warmup == false switches to the policy's
  /// start (b0) and then applies it.
  void observe_round(const std::vector<index_t>& updates, const std::vector<index_t>& samples,
                     const std::vector<double>& busy_s, const std::vector<bool>& active,
                     bool warmup);

  /// The size a slot without history takes: the warm-up size, or b0 after the warm-up.
  index_t start_size(bool past_warmup) const;
  /// Restores one slot of a resumed or continued run (TrainState): its size and throughput.
  void restore_slot(int slot, index_t size, double rate);
  /// Restores whether the post-warm-up policy had started; slots keep their sizes.
  void set_past_warmup(bool past) { past_warmup_ = past; }
  /// True once the post-warm-up policy has started.
  bool past_warmup() const { return past_warmup_; }
  /// Across nodes: `paper` and `proportional` adapt on the job's totals (updates, measured
  /// rates and active devices of every node, one reduction of three numbers per round), so
  /// update counts are equalised across ranks, not only within one.
  void set_node_sum(NodeSum sum) { node_sum_ = std::move(sum); }

 private:
  TrainOptions options_;
  std::vector<index_t> sizes_;
  std::vector<double> rates_;
  bool past_warmup_ = false;
  NodeSum node_sum_;
};

}  // namespace hetsgd
