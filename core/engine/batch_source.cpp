#include "core/engine/batch_source.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/cluster/cluster.h"
#include "core/error.h"
#include "core/random.h"

namespace hetsgd {

std::vector<index_t> BatchSource::permutation(index_t num_points, std::uint64_t seed,
                                              index_t epoch) {
  std::vector<index_t> p(static_cast<size_t>(num_points));
  for (index_t i = 0; i < num_points; ++i) p[i] = i;
  const std::uint64_t stream = hash64(seed, static_cast<std::uint64_t>(epoch));
  for (index_t i = num_points - 1; i > 0; --i) {
    // Multiply-shift maps 64 random bits to [0, i] with negligible bias for i < 2^32.
    const std::uint64_t r = hash64(stream, static_cast<std::uint64_t>(i));
    const auto j = static_cast<index_t>(
        (static_cast<unsigned __int128>(r) * static_cast<std::uint64_t>(i + 1)) >> 64);
    std::swap(p[i], p[j]);
  }
  return p;
}

BatchSource::BatchSource(index_t num_points, std::uint64_t seed)
    : num_points_(num_points), seed_(seed) {
  HETSGD_CHECK(num_points >= 1, "BatchSource over " << num_points << " points");
  permutation_ = permutation(num_points_, seed_, 0);
}

BatchSource::BatchSource(const BatchSourceState& s)
    : num_points_(s.num_points),
      seed_(s.seed),
      epoch_(s.epoch),
      position_(s.position),
      consumed_(s.consumed),
      permutation_(s.permutation),
      requeued_(s.requeued) {
  HETSGD_CHECK(num_points_ >= 1, "BatchSource state with " << num_points_ << " points");
  HETSGD_CHECK(static_cast<index_t>(permutation_.size()) == num_points_,
               "BatchSource state: permutation has " << permutation_.size() << " entries, "
                                                     << num_points_ << " points");
  HETSGD_CHECK(position_ >= 0 && position_ <= num_points_, "BatchSource state: position "
                                                               << position_ << " outside [0, "
                                                               << num_points_ << "]");
  for (index_t r : requeued_) {
    HETSGD_CHECK(r >= 0 && r < num_points_,
                 "BatchSource state: requeued point " << r << " >= " << num_points_);
  }
}

index_t BatchSource::next(index_t n, std::vector<index_t>* out) {
  HETSGD_CHECK(n >= 0, "BatchSource::next(" << n << ")");
  out->clear();
  out->reserve(static_cast<size_t>(n));
  if (cluster_ != nullptr) {
    index_t seen = 0;
    claim_shared(n, out, &seen, /*bounded=*/false);  // no quota or limit: all n points
    return seen;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const index_t before = consumed_;
  while (static_cast<index_t>(out->size()) < n && requeued_head_ < requeued_.size()) {
    out->push_back(requeued_[requeued_head_++]);
  }
  if (requeued_head_ == requeued_.size()) {
    requeued_.clear();
    requeued_head_ = 0;
  }
  take_positions(epoch_ * num_points_ + position_, n - static_cast<index_t>(out->size()), out);
  consumed_ += n;
  return before;
}

void BatchSource::take_positions(std::int64_t start, index_t n, std::vector<index_t>* out) {
  if (n <= 0) return;
  if (start != epoch_ * num_points_ + position_) {
    // Another node drew meanwhile: jump to the claimed position, in whichever epoch it lies.
    const index_t epoch = start / num_points_;
    if (epoch != epoch_) permutation_ = permutation(num_points_, seed_, epoch);
    epoch_ = epoch;
    position_ = start % num_points_;
  }
  while (n > 0) {
    if (position_ == num_points_) {
      // Epoch tail done: the next epoch's permutation continues this very batch.
      ++epoch_;
      position_ = 0;
      permutation_ = permutation(num_points_, seed_, epoch_);
    }
    const index_t take = std::min<index_t>(n, num_points_ - position_);
    out->insert(out->end(), permutation_.begin() + position_,
                permutation_.begin() + position_ + take);
    position_ += take;
    n -= take;
  }
}

void BatchSource::set_limit(index_t points) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = points;
}

void BatchSource::begin_round(index_t quota) {
  std::lock_guard<std::mutex> lock(mutex_);
  quota_ = quota;
  round_claimed_ = 0;
  quota_spent_ = false;
  if (cluster_ == nullptr) return;
  // Rank 0 reads where the round begins and tells the others: no rank claims before it has the
  // base, and rank 0 read it before any rank could claim.
  std::int64_t base = cluster_->is_root() ? cluster_->fetch_add(SharedCounter::kCursor, 0) : 0;
  cluster_->broadcast(&base, sizeof base, 0);
  round_base_ = base;
}

bool BatchSource::claim(index_t n, std::vector<index_t>* out, index_t* seen) {
  HETSGD_CHECK(n >= 0, "BatchSource::claim(" << n << ")");
  if (cluster_ != nullptr) return claim_shared(n, out, seen, /*bounded=*/true);
  out->clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The last batch before the epoch limit takes only the points left, so `--epochs=1` on a
    // set smaller than a batch trains one epoch, not b / N of them.
    if (limit_ > 0) n = std::min(n, limit_ - consumed_);
    if (n <= 0) return false;
    // The points count against the quota either way, so the round may overshoot by at most
    // one batch per device (the barrier tail).
    const index_t before = round_claimed_;
    round_claimed_ += n;
    if (quota_ > 0 && before >= quota_) return false;
  }
  *seen = next(n, out);
  return true;
}

bool BatchSource::claim_shared(index_t n, std::vector<index_t>* out, index_t* seen, bool bounded) {
  out->clear();
  std::vector<index_t> held;  // requeued points, served first
  index_t limit = 0, quota = 0;
  std::int64_t base = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bounded) {
      if (quota_spent_) return false;
      // At the limit only points this node holds are left (their positions are below it).
      if (limit_hit_) n = std::min(n, static_cast<index_t>(requeued_.size() - requeued_head_));
      limit = limit_;
      quota = quota_;
      base = round_base_;
    }
    while (static_cast<index_t>(held.size()) < n && requeued_head_ < requeued_.size()) {
      held.push_back(requeued_[requeued_head_++]);
    }
    if (requeued_head_ == requeued_.size()) {
      requeued_.clear();
      requeued_head_ = 0;
    }
  }
  const index_t fresh = n - static_cast<index_t>(held.size());
  std::int64_t start = -1;
  index_t granted = 0;
  if (fresh > 0) {
    // The one remote operation of a claim, outside the mutex: other workers of this node claim
    // (or finish materialising their points) meanwhile.
    start = cluster_->fetch_add(SharedCounter::kCursor, fresh);
    granted = fresh;
    if (limit > 0 && start + fresh >= limit) {
      // Positions past the limit go back to the counter: every claim returns its own, so the
      // counter settles at the limit exactly and a resumed run continues from there. Once per
      // device at the end of the run.
      granted = static_cast<index_t>(std::clamp<std::int64_t>(limit - start, 0, fresh));
      if (granted < fresh) cluster_->fetch_add(SharedCounter::kCursor, -(fresh - granted));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (start < 0) {
    *seen = last_start_;
    *out = std::move(held);
    return !out->empty();
  }
  last_start_ = start;
  if (limit > 0 && start + fresh >= limit) limit_hit_ = true;
  std::vector<index_t> points;
  take_positions(start, granted, &points);
  if (quota > 0 && start - base >= quota) {
    // The counter moved already: these points are this node's to serve first next time.
    quota_spent_ = true;
    requeued_.insert(requeued_.begin() + static_cast<std::ptrdiff_t>(requeued_head_), held.begin(),
                     held.end());
    requeued_.insert(requeued_.end(), points.begin(), points.end());
    return false;
  }
  held.insert(held.end(), points.begin(), points.end());
  if (held.empty()) return false;
  *seen = start;
  *out = std::move(held);
  return true;
}

void BatchSource::release(const std::vector<index_t>& points) {
  requeue(points);
  std::lock_guard<std::mutex> lock(mutex_);
  if (cluster_ == nullptr) round_claimed_ -= static_cast<index_t>(points.size());
}

bool BatchSource::limit_reached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (limit_ <= 0) return false;
  if (cluster_ == nullptr) return consumed_ >= limit_;
  return limit_hit_ && requeued_head_ == requeued_.size();
}

void BatchSource::requeue(const std::vector<index_t>& points) {
  std::lock_guard<std::mutex> lock(mutex_);
  requeued_.insert(requeued_.end(), points.begin(), points.end());
  consumed_ -= static_cast<index_t>(points.size());
}

void BatchSource::share(Cluster& cluster) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cluster.is_root()) {
    const std::int64_t now = cluster.fetch_add(SharedCounter::kCursor, 0);
    cluster.fetch_add(SharedCounter::kCursor, epoch_ * num_points_ + position_ - now);
  } else {
    requeued_.clear();
    requeued_head_ = 0;
  }
  cluster_ = &cluster;
  cluster.barrier();  // nobody claims before rank 0 has published the position
  settle_locked();
}

void BatchSource::settle() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cluster_ != nullptr) settle_locked();
}

void BatchSource::settle_locked() {
  // The position, less the points every node holds (quota-refused or failed batches): one read
  // and one small reduction per round, so that consumed() costs no remote operation.
  std::int64_t pending = static_cast<std::int64_t>(requeued_.size() - requeued_head_);
  cluster_->allreduce_sum(&pending, 1);
  settled_ = cluster_->fetch_add(SharedCounter::kCursor, 0) - pending;
}

index_t BatchSource::consumed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cluster_ == nullptr ? consumed_ : settled_;
}

double BatchSource::epochs() const {
  return static_cast<double>(consumed()) / static_cast<double>(num_points_);
}

BatchSourceState BatchSource::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  BatchSourceState s;
  s.seed = seed_;
  s.num_points = num_points_;
  s.epoch = epoch_;
  s.position = position_;
  s.consumed = consumed_;
  s.permutation = permutation_;
  s.requeued.assign(requeued_.begin() + static_cast<std::ptrdiff_t>(requeued_head_),
                    requeued_.end());
  if (cluster_ == nullptr) return s;
  // The global position, and every rank's requeued points in rank order.
  const std::int64_t at = cluster_->fetch_add(SharedCounter::kCursor, 0);
  const std::string mine(reinterpret_cast<const char*>(s.requeued.data()),
                         s.requeued.size() * sizeof(index_t));
  s.requeued.clear();
  for (const std::string& part : cluster_->allgather(mine)) {
    if (part.empty()) continue;
    const std::size_t from = s.requeued.size();
    s.requeued.resize(from + part.size() / sizeof(index_t));
    std::memcpy(s.requeued.data() + from, part.data(), part.size());
  }
  s.epoch = at / num_points_;
  s.position = at % num_points_;
  if (s.epoch != epoch_) s.permutation = permutation(num_points_, seed_, s.epoch);
  s.consumed = at - static_cast<index_t>(s.requeued.size());
  return s;
}

}  // namespace hetsgd
