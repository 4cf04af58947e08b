#include "core/engine/batch_policy.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hetsgd {

std::vector<index_t> paper_batch_sizes(const std::vector<index_t>& current,
                                       const std::vector<index_t>& updates,
                                       const std::vector<bool>& active, index_t b_min,
                                       index_t b_max, index_t step) {
  double total = 0.0;
  int k = 0;
  for (size_t i = 0; i < current.size() && i < active.size() && i < updates.size(); ++i) {
    if (!active[i]) continue;
    total += static_cast<double>(updates[i]);
    ++k;
  }
  return paper_batch_sizes(current, updates, active, b_min, b_max, step, total, k);
}

std::vector<index_t> paper_batch_sizes(const std::vector<index_t>& current,
                                       const std::vector<index_t>& updates,
                                       const std::vector<bool>& active, index_t b_min,
                                       index_t b_max, index_t step, double total, int k) {
  HETSGD_CHECK(current.size() == updates.size() && current.size() == active.size(),
               "paper_batch_sizes: mismatched lengths " << current.size() << ", " << updates.size()
                                                        << ", " << active.size());
  std::vector<index_t> out = current;
  if (k == 0 || total <= 0.0) return out;
  const double fair = 1.0 / k;
  for (size_t i = 0; i < current.size(); ++i) {
    if (!active[i]) continue;
    const double p = static_cast<double>(updates[i]) / total;
    // A device doing more than its share of updates is fast: a bigger batch slows its update
    // rate down (and raises its learning rate with it), and vice versa.
    if (p < fair && out[i] > b_min) out[i] -= step;
    if (p > fair && out[i] < b_max) out[i] += step;
    out[i] = std::clamp(out[i], b_min, b_max);
  }
  return out;
}

std::vector<index_t> proportional_batch_sizes(const std::vector<index_t>& current,
                                              const std::vector<double>& rates,
                                              const std::vector<bool>& active, index_t total,
                                              index_t b_min, index_t b_max) {
  double sum = 0.0;
  for (size_t i = 0; i < rates.size() && i < active.size(); ++i) {
    if (active[i] && rates[i] > 0.0) sum += rates[i];
  }
  return proportional_batch_sizes(current, rates, active, total, b_min, b_max, sum);
}

std::vector<index_t> proportional_batch_sizes(const std::vector<index_t>& current,
                                              const std::vector<double>& rates,
                                              const std::vector<bool>& active, index_t total,
                                              index_t b_min, index_t b_max, double sum) {
  HETSGD_CHECK(current.size() == rates.size() && current.size() == active.size(),
               "proportional_batch_sizes: mismatched lengths "
                   << current.size() << ", " << rates.size() << ", " << active.size());
  std::vector<index_t> out = current;
  if (sum <= 0.0) return out;
  for (size_t i = 0; i < rates.size(); ++i) {
    if (!active[i] || rates[i] <= 0.0) continue;
    const auto b = static_cast<index_t>(std::llround(static_cast<double>(total) * rates[i] / sum));
    out[i] = std::clamp(b, b_min, b_max);
  }
  return out;
}

BatchSizer::BatchSizer(const TrainOptions& options, int num_slots)
    : options_(options), rates_(static_cast<size_t>(num_slots), 0.0) {
  HETSGD_CHECK(num_slots >= 1, "BatchSizer needs at least one device, got " << num_slots);
  const index_t warm = options.warmup_batch > 0 ? options.warmup_batch : options.b0;
  index_t start = warm;
  if (options.warmup_epochs <= 0.0) {
    past_warmup_ = true;
    start = options.b0;
  }
  sizes_.assign(static_cast<size_t>(num_slots), start);
}

void BatchSizer::observe_round(const std::vector<index_t>& updates,
                               const std::vector<index_t>& samples,
                               const std::vector<double>& busy_s, const std::vector<bool>& active,
                               bool warmup) {
  const size_t k = sizes_.size();
  HETSGD_CHECK(
      updates.size() == k && samples.size() == k && busy_s.size() == k && active.size() == k,
      "BatchSizer::observe_round: expected " << k << " slots");
  for (size_t i = 0; i < k; ++i) {
    if (!active[i] || samples[i] <= 0 || busy_s[i] <= 0.0) continue;
    const double r = static_cast<double>(samples[i]) / busy_s[i];
    rates_[i] = rates_[i] > 0.0
                    ? options_.throughput_ema * r + (1.0 - options_.throughput_ema) * rates_[i]
                    : r;
  }
  if (warmup) return;
  // Measured throughput is timing: a deterministic run keeps `proportional`'s sizes at b0 so
  // that what every replica trains depends only on the seed.
  const bool timed = options_.batch_policy == BatchPolicy::kProportional && !options_.deterministic;
  if (!past_warmup_) {
    past_warmup_ = true;
    const index_t start = options_.b0;
    for (size_t i = 0; i < k; ++i) sizes_[i] = start;
    // Every policy starts from b0. `paper` used to start at b_max, as the authors' code does,
    // but a round of S = 2048 then holds one b_max = 1024 batch per device: update counts
    // are equal by construction and the walk never moves. From b0 a round holds S / b0
    // batches, the fast device takes more of them, and the walk has a signal.
    // `proportional` may use the warm-up's throughput now.
    if (!timed) return;
  }
  if (options_.batch_policy == BatchPolicy::kFixed ||
      (options_.batch_policy == BatchPolicy::kProportional && !timed)) {
    return;
  }
  // The job's totals: this node's, summed over every node when there are several (every node
  // reaches this point in the same round: warm-up and policy follow the shared counters).
  double totals[3] = {0.0, 0.0, 0.0};  // updates, measured rate, active devices
  for (size_t i = 0; i < k; ++i) {
    if (!active[i]) continue;
    totals[0] += static_cast<double>(updates[i]);
    if (rates_[i] > 0.0) totals[1] += rates_[i];
    totals[2] += 1.0;
  }
  if (node_sum_) node_sum_(totals, 3);
  const int live = static_cast<int>(std::lround(totals[2]));
  if (options_.batch_policy == BatchPolicy::kPaper) {
    sizes_ = paper_batch_sizes(sizes_, updates, active, options_.b_min, options_.b_max,
                               options_.batch_step, totals[0], live);
  } else {
    sizes_ = proportional_batch_sizes(sizes_, rates_, active, live * options_.b0, options_.b_min,
                                      options_.b_max, totals[1]);
  }
}

index_t BatchSizer::start_size(bool past_warmup) const {
  if (!past_warmup) return options_.warmup_batch > 0 ? options_.warmup_batch : options_.b0;
  return options_.b0;
}

void BatchSizer::restore_slot(int slot, index_t size, double rate) {
  HETSGD_CHECK(slot >= 0 && slot < static_cast<int>(sizes_.size()),
               "BatchSizer::restore_slot: slot " << slot << " of " << sizes_.size());
  HETSGD_CHECK(size >= 1, "BatchSizer::restore_slot: batch size " << size << " < 1");
  sizes_[static_cast<std::size_t>(slot)] = size;
  rates_[static_cast<std::size_t>(slot)] = rate;
}

}  // namespace hetsgd
