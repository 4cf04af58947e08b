/// \file core/engine/round.h
/// One round of a training algorithm: the interface every algorithm implements, and what a
/// round may use (core/engine/README.md).
///
/// A round trains the replicas on about S points and ends with the algorithm's merge. The run
/// loop (trainer.cpp) owns the clock, the stopping rules, evaluation and records; a round only
/// moves points from the cursor through the devices into the centre. A new algorithm is one
/// new file: a Round subclass and its make_*_round() factory, listed in make_round().
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/engine/batch_policy.h"
#include "core/engine/batch_source.h"
#include "core/engine/centre.h"
#include "core/engine/node_group.h"
#include "core/engine/replica_set.h"
#include "core/engine/train_options.h"

namespace hetsgd {

/// What a round works with. Built by the run loop; references outlive the round.
struct RoundContext {
  const TrainOptions& options;  ///< validated options of the run
  const Dataset& train;         ///< training set
  ReplicaSet& replicas;         ///< devices, workers, liveness
  Centre& centre;               ///< Z and Z_prev
  Communicator& comm;           ///< merges and all-reduces
  BatchSource& source;          ///< the shared cursor (global across nodes for adaptive, avg)
  NodeGroup& nodes;             ///< this node's peers (a single node without MPI)
  BatchSizer& sizer;            ///< adaptive per-device batch sizes
  LrScaling scaling;            ///< resolved learning-rate scaling
  index_t num_points;           ///< N
  double decay_unit;            ///< the schedule's decay unit U in points (decay_unit())
  index_t round_samples;        ///< S
  index_t point_limit;          ///< points the epoch limit allows in all (0 = no limit)
  /// True when workers must stop taking batches (interrupt, time or epoch budget); checked
  /// before every batch, from any worker thread.
  std::function<bool()> out_of_budget;
};

/// Asks for permission to train a batch of `b` points (a round's quota); false = round over.
using TakeFn = std::function<bool(index_t b)>;
/// Trains `slot`'s replica on the cursor's next `b` points at the learning rate of a batch
/// of `lr_batch` points (TrainOptions::lr_batch); false when the budget or `take` says stop.
/// On a device error the points go back to the cursor before the exception propagates, so no
/// point is lost (the quota is the failed slot's own, and the slot stops taking). Runs on the
/// slot's worker thread.
bool local_step(RoundContext& ctx, int slot, index_t b, index_t lr_batch, const TakeFn& take);

/// Trains `slot`'s replica on the given points (already taken from the cursor; `seen` is the
/// cursor's T before them) at the rate of a `lr_batch`-point batch. Throws on device error
/// (the caller requeues).
void train_batch(RoundContext& ctx, int slot, const std::vector<index_t>& rows, index_t seen,
                 index_t lr_batch);

/// True when a model-averaging round's merge would leave Z equal to the one live replica
/// (adaptive or avg with one device on one node, alpha = 1, mu = 0, beta >= 1, no moving
/// average): Z' = A = that replica, bit for bit, and the restart writes nothing. merge_round()
/// then skips the merge, and the run loop reads Z from the replica where it reads it for sync
/// (evaluation, checkpoints, the end), instead of copying its touched rows every round.
bool centre_follows_replica(const TrainOptions& options, const ReplicaSet& replicas,
                            const NodeGroup& nodes);

/// One algorithm's round.
class Round {
 public:
  virtual ~Round() = default;
  /// Runs one round; `weights` receives the merge weight p_i of every slot (0 for failed
  /// slots). Returns the seconds spent merging or all-reducing.
  virtual double run(RoundContext& ctx, std::vector<double>* weights) = 0;
  /// The batch size `slot` trains with (for records and summaries).
  virtual index_t batch_of(const TrainOptions& options, const BatchSizer& sizer, int slot) const {
    (void)sizer;
    (void)slot;
    return options.b0;
  }
  /// True when, between rounds, every alive replica holds exactly the centre (evaluation then
  /// needs no swap, and checkpoints need not save replicas).
  virtual bool replicas_hold_centre(const TrainOptions& options) const = 0;
  /// True when the algorithm keeps no separate centre (sync): the run loop refreshes Z from a
  /// replica before it evaluates or saves.
  virtual bool centre_is_replica() const { return false; }
};

/// Adaptive SGD (adaptive_round.cpp).
std::unique_ptr<Round> make_adaptive_round();
/// Synchronous SGD (sync_round.cpp).
std::unique_ptr<Round> make_sync_round();
/// Static model averaging, the paper's "GD" (avg_round.cpp).
std::unique_ptr<Round> make_avg_round();
/// Synchronous EASGD (easgd_round.cpp).
std::unique_ptr<Round> make_easgd_round();
/// The round of `algo`.
std::unique_ptr<Round> make_round(Algo algo);

/// Normalised merge over the alive slots with weights of `kind` from this round's counters,
/// then the elastic centre update. Skipped (replicas still equal the centre) when nothing was
/// trained. Across nodes the weights are normalised over every node's slots (the node's
/// share times its local weights) and the node averages are summed. Returns its seconds.
double merge_round(RoundContext& ctx, std::vector<double>* weights, MergeWeights kind, double alpha,
                   double beta, double mu);

/// Uniform weights over the alive slots (0 for failed ones).
std::vector<double> uniform_alive_weights(const ReplicaSet& replicas);

}  // namespace hetsgd
