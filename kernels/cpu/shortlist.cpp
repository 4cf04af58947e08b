#include "kernels/cpu/shortlist.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>

#include "core/error.h"
#include "core/random.h"
#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kQueryBlock = 8;                       // batch rows per index-query task
constexpr index_t kSnapshotBlock = 4096;                 // labels per snapshot task
constexpr std::uint64_t kDrawStream = 0x5eed5a3b1e5ULL;  // keeps draws apart from init seeds
constexpr int kBuilderNice = 10;                         // the builder's priority below training

// The index is an aid, training the critical path: the builder runs at a lower priority, so
// on a machine whose cores the training threads fill it takes the time they leave.
void lower_priority() {
#ifdef __linux__
  // On Linux a nice value belongs to the thread; failing leaves the default priority.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kBuilderNice);
#endif
}
}  // namespace

Shortlist::Shortlist(const ModelConfig& config)
    : num_labels_(config.num_labels),
      hidden_(config.hidden.back()),
      seed_(config.seed),
      cfg_(config.shortlist),
      index_(std::make_unique<LabelIndex>()) {
  params_.m = cfg_.ann_m;
  params_.ef_construction = cfg_.ann_ef_construction;
  params_.ef_search = cfg_.ann_ef_search;
  slot_.assign(static_cast<size_t>(num_labels_), -1);
}

Shortlist::~Shortlist() {
  cancel_.store(true);
  if (builder_.joinable()) builder_.join();
}

void Shortlist::wait() {
  if (builder_.joinable()) builder_.join();
  if (build_error_) {
    std::exception_ptr e = build_error_;
    build_error_ = nullptr;
    next_.reset();
    std::rethrow_exception(e);
  }
}

void Shortlist::snapshot(const float* w, const float* b) {
  const index_t dim = hidden_ + 1;
  const std::size_t stride = LabelIndex::code_bytes(dim);
  snapshot_.resize(static_cast<size_t>(num_labels_) * stride);
  std::uint8_t* out = snapshot_.data();
  for_blocks(num_labels_, kSnapshotBlock, [&](index_t j0, index_t j1) {
    // Transpose a block of columns into rows (the weights are [hidden x L]), then code them.
    std::vector<float> rows(static_cast<size_t>((j1 - j0) * dim));
    for (index_t i = 0; i < hidden_; ++i) {
      const float* row = w + i * num_labels_;
      for (index_t j = j0; j < j1; ++j) rows[(j - j0) * dim + i] = row[j];
    }
    for (index_t j = j0; j < j1; ++j) {
      rows[(j - j0) * dim + hidden_] = b[j];
      LabelIndex::encode(rows.data() + (j - j0) * dim, dim,
                         out + static_cast<std::size_t>(j) * stride);
    }
  });
}

void Shortlist::build_now(const float* w, const float* b) {
  wait();
  snapshot(w, b);
  index_->build(snapshot_.data(), num_labels_, hidden_, params_);
  std::vector<std::uint8_t>().swap(snapshot_);
}

void Shortlist::start_build() {
  next_ = std::make_unique<LabelIndex>();
  LabelIndex* target = next_.get();
  build_done_.store(false);
  builder_ = std::thread([this, target] {
    lower_priority();
    const Clock::time_point t0 = Clock::now();
    try {
      target->build(snapshot_.data(), num_labels_, hidden_, params_, &cancel_);
    } catch (...) {
      build_error_ = std::current_exception();
    }
    // The index holds its own copy of the codes: free the snapshot while training runs.
    std::vector<std::uint8_t>().swap(snapshot_);
    build_end_ = Clock::now();
    last_build_s_ = std::chrono::duration<double>(build_end_ - t0).count();
    build_done_.store(true, std::memory_order_release);
  });
}

void Shortlist::refresh(std::int64_t step, const float* w, const float* b) {
  if (cfg_.hard_negatives == 0 || step <= 0 || step % cfg_.rebuild_steps != 0) return;
  if (builder_.joinable()) {
    // Without wait_for_index a build still running is left alone until a later multiple.
    if (!cfg_.wait_for_index && !build_done_.load(std::memory_order_acquire)) return;
    wait();
    index_ = std::move(next_);
    ++swaps_;
  }
  // Without waiting, builds are spaced so that one runs at most index_duty of the time: the
  // builder shares the cores with training, and at 670,091 labels a build lasts many
  // rebuild intervals.
  if (!cfg_.wait_for_index && last_build_s_ > 0.0) {
    const double idle_s = std::chrono::duration<double>(Clock::now() - build_end_).count();
    if (idle_s < last_build_s_ * (1.0 / cfg_.index_duty - 1.0)) return;
  }
  snapshot(w, b);
  start_build();
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
    add(l, 1);
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
  // Ascending ids: the column gathers and scatters then walk each weight row forwards.
  std::vector<col_t>& ids = cand_.ids;
  for (col_t id : ids) slot_[id] = -1;
  std::vector<std::pair<col_t, std::uint8_t>> order(static_cast<size_t>(total));
  for (index_t c = 0; c < total; ++c) order[c] = {ids[c], kind_[c]};
  std::sort(order.begin(), order.end());
  cand_.weight.resize(static_cast<size_t>(total));
  for (index_t c = 0; c < total; ++c) {
    ids[c] = order[c].first;
    cand_.weight[c] = order[c].second == 1 ? 1.0f : wt;
    slot_[ids[c]] = static_cast<std::int32_t>(c);
  }
  cand_.label_slot.resize(static_cast<size_t>(batch.label_nnz()));
  for (index_t p = 0; p < batch.label_nnz(); ++p) cand_.label_slot[p] = slot_[batch.y_indices[p]];
  for (col_t id : ids) slot_[id] = -1;
  return cand_;
}

}  // namespace hetsgd::cpu
