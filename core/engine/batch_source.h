/// \file core/engine/batch_source.h
/// The shared cursor every device pulls its batches from (DESIGN §6).
///
/// A shuffled permutation of the N training points per epoch (a pure function of the seed and
/// the epoch number); next(n) hands out the next n indices. An epoch's tail is never skipped:
/// a request that runs past the end takes the rest of this epoch and continues into the next
/// epoch's fresh permutation. Points of a failed device's in-flight batch can be requeue()d:
/// they are handed out again before the cursor moves on, so every point is still trained once
/// per epoch. Thread-safe: any number of workers may call next()/requeue() concurrently.
///
/// Across nodes (share()), the position in the stream of epochs lives in a shared counter of
/// the Cluster: next() claims its points with one fetch-and-add, so nodes take batches from one
/// global cursor, each computing the (seed-determined) permutations itself. Requeued points
/// stay on the node that requeued them.
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

  /// Makes this the global cursor of every rank of `cluster` from here on (collective; every
  /// rank's source must hold the same state, e.g. a fresh start or the same checkpoint): rank 0
  /// publishes the position, the other ranks drop their requeued points (rank 0 serves them).
  /// `cluster` must outlive the source.
  void share(Cluster& cluster);

  /// T: points handed out minus points requeued (shared: over all ranks, less the requeued
  /// points other ranks still hold).
  index_t consumed() const;
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
};

}  // namespace hetsgd
