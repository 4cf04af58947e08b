#include "core/engine/batch_source.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/dist/cluster.h"
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
  std::lock_guard<std::mutex> lock(mutex_);
  index_t before = consumed_;
  while (static_cast<index_t>(out->size()) < n && requeued_head_ < requeued_.size()) {
    out->push_back(requeued_[requeued_head_++]);
  }
  if (requeued_head_ == requeued_.size()) {
    requeued_.clear();
    requeued_head_ = 0;
  }
  index_t fresh = n - static_cast<index_t>(out->size());
  if (cluster_ != nullptr && fresh > 0) {
    // One claim on the global stream; the points are this epoch's permutation at the claimed
    // position, which any rank computes for itself.
    const std::int64_t start = cluster_->fetch_add(SharedCounter::kCursor, fresh);
    before = start;
    const index_t epoch = start / num_points_;
    if (epoch != epoch_) permutation_ = permutation(num_points_, seed_, epoch);
    epoch_ = epoch;
    position_ = start % num_points_;
  }
  while (static_cast<index_t>(out->size()) < n) {
    if (position_ == num_points_) {
      // Epoch tail done: the next epoch's permutation continues this very batch.
      ++epoch_;
      position_ = 0;
      permutation_ = permutation(num_points_, seed_, epoch_);
    }
    const index_t take =
        std::min<index_t>(n - static_cast<index_t>(out->size()), num_points_ - position_);
    out->insert(out->end(), permutation_.begin() + position_,
                permutation_.begin() + position_ + take);
    position_ += take;
  }
  consumed_ += n;
  return before;
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
}

index_t BatchSource::consumed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cluster_ == nullptr) return consumed_;
  const auto pending = static_cast<index_t>(requeued_.size() - requeued_head_);
  return cluster_->fetch_add(SharedCounter::kCursor, 0) - pending;
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
