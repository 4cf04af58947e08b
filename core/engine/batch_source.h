/// \file core/engine/batch_source.h
/// The shared cursor every device pulls its batches from (core/engine/README.md).
///
/// A shuffled permutation of the N training points per epoch (a pure function of the seed and
/// the epoch number); next(n) hands out the next n indices. An epoch's tail is never skipped:
/// a request that runs past the end takes the rest of this epoch and continues into the next
/// epoch's fresh permutation. Points of a failed device's in-flight batch can be requeue()d:
/// they are handed out again before the cursor moves on, so every point is still trained once
/// per epoch. Thread-safe: any number of workers may call next()/requeue() concurrently.
///
/// A batch of a round is claim()ed: the epoch limit and the round's quota (begin_round) are
/// checked in the same step that hands out the points. Across nodes (share()), the position
/// in the stream of epochs lives in a shared counter of the Cluster, and a claim is ONE
/// fetch-and-add on it, made outside this object's mutex: nodes take batches from one global
/// cursor, each computing the (seed-determined) permutations itself, and the round's quota is
/// counted on that same counter (points drawn since the round began), so a claim needs no
/// second trip. A claim the quota refuses has moved the counter already: its points are
/// requeued on this node and served first by its next claim. Requeued points stay on the node
/// that requeued them (core/cluster/README.md).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "core/types.h"

namespace hetsgd {

class Cluster;

/// Everything needed to continue a BatchSource exactly where it stopped (checkpoints).
struct BatchSourceState {
  std::uint64_t seed = 0;            ///< shuffling seed
  index_t num_points = 0;            ///< N
  index_t epoch = 0;                 ///< epoch of the current permutation
  index_t position = 0;              ///< next unread slot of the current permutation
  index_t consumed = 0;              ///< T: points handed out minus points requeued
  std::vector<index_t> permutation;  ///< current epoch's permutation (N entries)
  std::vector<index_t> requeued;     ///< points handed back, served first (FIFO)
};

/// The shared, thread-safe cursor over shuffled epochs.
class BatchSource {
 public:
  /// A cursor over points [0, num_points) shuffled with `seed`; starts at epoch 0.
  BatchSource(index_t num_points, std::uint64_t seed);
  /// Resumes from a saved state (checked for consistency).
  explicit BatchSource(const BatchSourceState& state);

  /// Appends exactly `n` point indices to `out` (cleared first): requeued points first, then
  /// the permutation, wrapping into the next epoch. Returns T (points consumed) before this
  /// call, which the caller uses for the learning-rate schedule.
  index_t next(index_t n, std::vector<index_t>* out);
  /// Hands points back (a failed batch); they are served before any new point.
  void requeue(const std::vector<index_t>& points);

  /// The epoch limit: claim() hands out no point beyond `points` consumed (0: no limit).
  void set_limit(index_t points);
  /// Starts a round whose claims hand out `quota` points in all (over every node when
  /// shared), possibly overshooting by one batch per device. Collective when shared (rank 0
  /// reads the position and broadcasts it); call while no worker claims.
  void begin_round(index_t quota);
  /// Claims a batch of the round (any worker thread): at most `n` points into `out` (cleared
  /// first), requeued points first, fewer only at the epoch limit; `*seen` is T before it (for
  /// the learning-rate schedule). False, with nothing claimed, once the round's quota is handed
  /// out or the epoch limit is reached.
  bool claim(index_t n, std::vector<index_t>* out, index_t* seen);
  /// Gives a claimed batch back (its device failed): its points are requeued and no longer
  /// count against the round's quota.
  void release(const std::vector<index_t>& points);
  /// Whether the epoch limit is reached, as this node knows without asking the others (no
  /// remote operation: checked before every batch).
  bool limit_reached() const;

  /// Makes this the global cursor of every rank of `cluster` from here on (collective; every
  /// rank's source must hold the same state, e.g. a fresh start or the same checkpoint): rank 0
  /// publishes the position, the other ranks drop their requeued points (rank 0 serves them).
  /// `cluster` must outlive the source.
  void share(Cluster& cluster);

  /// T: points handed out minus points requeued (shared: over all ranks, as of the last
  /// settle(); no remote operation).
  index_t consumed() const;
  /// Shared: brings consumed() up to date over every rank (collective: the position and the
  /// sum of the points each rank holds; call after a round, while no worker draws). One node:
  /// nothing to do.
  void settle();
  /// T / N.
  double epochs() const;
  /// N.
  index_t num_points() const { return num_points_; }
  /// A copy of the state for a checkpoint. Shared: collective (every rank's requeued points
  /// are gathered), call while no worker draws.
  BatchSourceState state() const;

  /// The permutation of epoch `epoch` for `seed` (Fisher-Yates with a counter-based generator,
  /// identical on every platform and standard library).
  static std::vector<index_t> permutation(index_t num_points, std::uint64_t seed, index_t epoch);

 private:
  mutable std::mutex mutex_;
  index_t num_points_;
  std::uint64_t seed_;
  index_t epoch_ = 0;
  index_t position_ = 0;
  index_t consumed_ = 0;
  std::vector<index_t> permutation_;
  std::vector<index_t> requeued_;
  size_t requeued_head_ = 0;
  Cluster* cluster_ = nullptr;  // set by share()
  index_t limit_ = 0;           // epoch limit in points (0: none)
  // The round's quota. One node: points claimed since begin_round (under mutex_). Shared: the
  // global position the round began at; quota_spent_ once a claim found the quota handed out.
  index_t quota_ = 0;
  index_t round_claimed_ = 0;
  std::int64_t round_base_ = 0;
  bool quota_spent_ = false;
  bool limit_hit_ = false;  // shared: a claim reached the limit (the counter stays there)
  std::int64_t last_start_ = 0;
  index_t settled_ = 0;  // shared: consumed() as of the last settle()  // shared: the latest
                         // claim's position (T of requeued claims)

  // A claim on the global cursor; `bounded`: the limit and the round's quota apply.
  void settle_locked();
  bool claim_shared(index_t n, std::vector<index_t>* out, index_t* seen, bool bounded);
  // Appends stream positions [start, start + n) as point ids (mutex_ held).
  void take_positions(std::int64_t start, index_t n, std::vector<index_t>* out);
};

}  // namespace hetsgd
