#include "kernels/cpu/shortlist.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/random.h"
#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kQueryBlock = 8;                         // batch rows per index-query task
constexpr std::uint64_t kDrawStream = 0x5eed5a3b1e5ULL;    // keeps draws apart from init seeds
constexpr std::uint64_t kPositiveStream = 0x9051714e5ULL;  // and the positives' draws from both
// The cost model of the index schedule (Shortlist::expected_build_steps), per unit of vector
// width: a step's three output GEMMs (scores, dW, dH) cost 6 flops a row and candidate; an
// insertion into the graph costs kInsertWork x M x ef_construction of them up to
// kInsertRefLabels labels, and grows as (labels / kInsertRefLabels)^kInsertGrowth beyond: a
// larger graph leaves the caches, and each insertion's walk is longer. Calibrated so that the
// estimate is a build's duration in steps of training on kRefThreads threads, measured alone
// (kernels/README.md, "The index schedule").
constexpr double kStepWork = 6.0;
constexpr double kInsertWork = 40.0;
constexpr double kInsertRefLabels = 22912.0;
constexpr double kInsertGrowth = 0.59;
constexpr double kRefThreads = 2.0;
// A build is installed this many expected durations after its start: room for a builder
// that gets less of the machine beside training (nice 10) than the estimate assumes.
constexpr double kLagMargin = 3.0;
constexpr double kMostSteps = 1e15;  // a bound on scheduled steps (no overflow)

// Sorts keys (label id << 8 | kind, ids distinct and below `num_labels`) by id: a least
// significant digit radix sort, 11 bits a pass (two passes up to 4.2M labels). At the
// amazon-3m shape a step has about 12,000 candidates, and std::sort of them ran serially for
// about 4% of the step's CPU time.
void sort_by_id(std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* scratch,
                index_t num_labels) {
  constexpr int kBits = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  int id_bits = 1;
  while (id_bits < 63 && (index_t{1} << id_bits) < num_labels) ++id_bits;
  scratch->resize(keys->size());
  std::vector<std::size_t> count(kBuckets);
  for (int shift = 8; shift < 8 + id_bits; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (std::uint64_t k : *keys) ++count[(k >> shift) & (kBuckets - 1)];
    std::size_t at = 0;
    for (std::size_t& c : count) {
      const std::size_t n = c;
      c = at;
      at += n;
    }
    for (std::uint64_t k : *keys) (*scratch)[count[(k >> shift) & (kBuckets - 1)]++] = k;
    keys->swap(*scratch);
  }
}
}  // namespace

Shortlist::Shortlist(const ModelConfig& config, int threads)
    : num_labels_(config.num_labels),
      threads_(std::max(1, threads)),
      hidden_(config.hidden.back()),
      seed_(config.seed),
      cfg_(config.shortlist),
      index_(std::make_shared<LabelIndex>()),
      builder_(std::make_shared<IndexBuilder>(config)) {
  slot_.assign(static_cast<size_t>(num_labels_), -1);
  if (cfg_.hard_negatives > 0) seen_.assign(static_cast<size_t>(num_labels_), 0);
}

void Shortlist::share_builder(std::shared_ptr<IndexBuilder> builder) {
  HETSGD_CHECK(can_share_builder(),
               "a shortlist that waits for its index builds cannot share "
               "its builder (the builds' timing would decide the run)");
  builder_ = std::move(builder);
}

void Shortlist::build_now(const float* w, const float* b) {
  wait();
  index_ = builder_->build_now(w, b);
}

void Shortlist::release_index() {
  builder_->release();
  index_ = std::make_shared<LabelIndex>();
  pending_ = 0;
  next_start_ = 0;
}

double Shortlist::expected_build_steps(index_t labels, const CsrBatch& batch) const {
  // The batch's candidates if each row brought its hard negatives: what a step costs once
  // the index is in use.
  const double rows = static_cast<double>(std::max<index_t>(batch.rows(), 1));
  const double cands = std::min(
      static_cast<double>(num_labels_),
      static_cast<double>(batch.label_nnz()) + rows * cfg_.hard_negatives + cfg_.sampled_negatives);
  // Both costs grow with the vectors' width, which cancels.
  const double n = static_cast<double>(labels);
  const double insert = kInsertWork * cfg_.ann_m * cfg_.ann_ef_construction *
                        std::pow(std::max(1.0, n / kInsertRefLabels), kInsertGrowth);
  // The builder is one thread, a step runs on the device's threads: more of them make steps
  // shorter, not the build.
  return n * insert / (kStepWork * rows * cands) * threads_ / kRefThreads;
}

void Shortlist::refresh(std::int64_t step, const float* w, const float* b, const CsrBatch& batch) {
  if (cfg_.hard_negatives == 0 || step <= 0) return;
  if (pending_ != 0 && step >= install_at_) {
    // The build's result goes in at the step fixed when it started, whatever it took.
    const std::int64_t ticket = pending_;
    pending_ = 0;
    builder_->wait_for(ticket);
    std::shared_ptr<const LabelIndex> newest = builder_->latest();
    if (newest != nullptr && newest != index_) {
      index_ = std::move(newest);
      ++swaps_;
    }
  }
  if (pending_ != 0 || step < next_start_ || step % cfg_.rebuild_steps != 0) return;
  // The first build covers the labels trained so far when they are few (see shortlist.h).
  const bool first = !started_ && builder_->builds() == 0;
  const bool subset = first && static_cast<index_t>(seen_ids_.size()) * 2 < num_labels_;
  const index_t labels = subset ? static_cast<index_t>(seen_ids_.size()) : num_labels_;
  // The schedule: install `lag` steps after the start, start the next build `period` steps
  // after this one, both whole rebuild intervals. With wait_for_index, one interval each.
  const std::int64_t rb = cfg_.rebuild_steps;
  const auto intervals = [rb](double steps) {
    const double n = std::ceil(std::min(steps, kMostSteps) / static_cast<double>(rb));
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(n)) * rb;
  };
  std::int64_t lag = rb, period = rb;
  if (!cfg_.wait_for_index) {
    const double expected = expected_build_steps(labels, batch);
    lag = intervals(kLagMargin * expected);
    period = std::max(lag, intervals(expected / cfg_.index_duty));
  }
  pending_ = builder_->start(w, b, subset ? &seen_ids_ : nullptr);
  started_ = true;
  install_at_ = step + lag;
  next_start_ = step + period;
  if (!seen_.empty()) {  // only the first build needs them
    std::vector<std::uint8_t>().swap(seen_);
    std::vector<col_t>().swap(seen_ids_);
  }
}

void Shortlist::choose_positives(const CsrBatch& batch, std::int64_t step) {
  cand_.label_used.clear();
  const int most = cfg_.max_positives;
  const index_t* yp = batch.y_indptr.data();
  bool any = false;
  for (index_t r = 0; r < batch.rows() && !any; ++r) any = most > 0 && yp[r + 1] - yp[r] > most;
  if (!any) return;
  cand_.label_used.assign(static_cast<size_t>(batch.label_nnz()), 1);
  const std::uint64_t key = hash64(seed_ ^ kPositiveStream, static_cast<std::uint64_t>(step));
  for (index_t r = 0; r < batch.rows(); ++r) {
    const index_t nl = yp[r + 1] - yp[r];
    if (nl <= most) continue;
    // The first `most` places of a partial Fisher-Yates shuffle of the row's entries.
    pick_.resize(static_cast<size_t>(nl));
    for (index_t i = 0; i < nl; ++i) pick_[i] = static_cast<std::int32_t>(i);
    const std::uint64_t row_key = hash64(key, static_cast<std::uint64_t>(r));
    for (index_t i = 0; i < most; ++i) {
      const std::uint64_t u = hash64(row_key, static_cast<std::uint64_t>(i));
      const auto j = i + static_cast<index_t>(u % static_cast<std::uint64_t>(nl - i));
      std::swap(pick_[i], pick_[j]);
    }
    for (index_t i = most; i < nl; ++i) cand_.label_used[yp[r] + pick_[i]] = 0;
  }
}

const CandidateSet& Shortlist::select(const CsrBatch& batch, const float* h, std::int64_t step) {
  const index_t rows = batch.rows();
  cand_.ids.clear();
  kind_.clear();
  auto add = [&](col_t id, std::uint8_t kind) {
    if (slot_[id] >= 0) return;
    slot_[id] = static_cast<std::int32_t>(cand_.ids.size());
    cand_.ids.push_back(id);
    kind_.push_back(kind);
  };
  for (index_t p = 0; p < batch.label_nnz(); ++p) {
    const col_t l = batch.y_indices[p];
    HETSGD_CHECK(l >= 0 && l < num_labels_,
                 "label id " << l << " outside [0, " << num_labels_ << ") in a shortlisted batch");
    if (!seen_.empty() && seen_[l] == 0) {
      seen_[l] = 1;
      seen_ids_.push_back(l);
    }
  }
  choose_positives(batch, step);
  for (index_t p = 0; p < batch.label_nnz(); ++p) {
    if (cand_.label_used.empty() || cand_.label_used[p] != 0) add(batch.y_indices[p], 1);
  }
  const int hard = cfg_.hard_negatives;
  if (hard > 0 && index_->ready()) {
    hard_.assign(static_cast<size_t>(rows * hard), -1);
    for_blocks(rows, kQueryBlock, [&](index_t r0, index_t r1) {
      std::vector<col_t> ids;
      std::vector<std::uint8_t> scratch;
      for (index_t r = r0; r < r1; ++r) {
        index_->search(h + r * hidden_, hard, &ids, &scratch);
        std::copy(ids.begin(), ids.end(), hard_.begin() + r * hard);
      }
    });
    for (col_t id : hard_) {
      if (id >= 0) add(id, 1);
    }
  }
  const auto fixed = static_cast<index_t>(cand_.ids.size());
  if (cfg_.sampled_negatives >= num_labels_) {
    for (index_t j = 0; j < num_labels_; ++j) add(static_cast<col_t>(j), 2);
  } else {
    const std::uint64_t key = hash64(seed_ ^ kDrawStream, static_cast<std::uint64_t>(step));
    for (int i = 0; i < cfg_.sampled_negatives; ++i) {
      const std::uint64_t u = hash64(key, static_cast<std::uint64_t>(i));
      add(static_cast<col_t>(u % static_cast<std::uint64_t>(num_labels_)), 2);
    }
  }
  const auto total = static_cast<index_t>(cand_.ids.size());
  const index_t uniform = total - fixed;
  const float wt = uniform == 0 ? 1.0f
                                : static_cast<float>(static_cast<double>(num_labels_ - fixed) /
                                                     static_cast<double>(uniform));
  // Ascending ids: the row gathers and scatters then walk the output weights forwards.
  std::vector<col_t>& ids = cand_.ids;
  for (col_t id : ids) slot_[id] = -1;
  order_.resize(static_cast<size_t>(total));
  for (index_t c = 0; c < total; ++c) {
    order_[c] = static_cast<std::uint64_t>(ids[c]) << 8 | kind_[c];
  }
  sort_by_id(&order_, &order_scratch_, num_labels_);
  cand_.weight.resize(static_cast<size_t>(total));
  for (index_t c = 0; c < total; ++c) {
    ids[c] = static_cast<col_t>(order_[c] >> 8);
    cand_.weight[c] = (order_[c] & 0xff) == 1 ? 1.0f : wt;
    slot_[ids[c]] = static_cast<std::int32_t>(c);
  }
  cand_.label_slot.resize(static_cast<size_t>(batch.label_nnz()));
  for (index_t p = 0; p < batch.label_nnz(); ++p) cand_.label_slot[p] = slot_[batch.y_indices[p]];
  for (col_t id : ids) slot_[id] = -1;
  return cand_;
}

}  // namespace hetsgd::cpu
