/// \file core/engine/node_group.h
/// The nodes of a run across servers, as the engine sees them (core/cluster/README.md): every rank
/// of the Cluster is one node with its own devices; inside a node the rounds merge as on one
/// server, and this object adds what crosses nodes at the points where the rounds need it.
///
/// - Batches: adaptive and avg rounds draw from one global cursor (BatchSource::share); an
///   adaptive round's quota S is counted on that cursor over all nodes (BatchSource::claim,
///   one remote operation per batch), so a faster node takes more batches of the same round.
/// - Merges: merge_share() turns a node's local merge weights into its share of the job's, and
///   the ClusterCommunicator (core/cluster/cluster_communicator.h) sums the node averages.
/// - Sync: span() places a node's shares inside the global batch; the gradient all-reduce goes
///   through the ClusterCommunicator.
/// - Control: rank 0 decides when to stop (agree_stop) and its clock is the run's.
/// With a single process every call is the identity (or a local counter), so the rounds run
/// the same code with and without MPI.
///
/// Threads: every call is collective (every rank calls it in the same order, from the
/// scheduler thread).
#pragma once

#include <cstdint>
#include <memory>

#include "core/cluster/cluster.h"
#include "core/types.h"

namespace hetsgd {

/// Where one node's devices sit among all nodes' (sync's global batch).
struct NodeSpan {
  index_t offset = 0;  ///< alive devices on lower ranks
  index_t total = 0;   ///< alive devices on all ranks
};

/// This node and its peers.
class NodeGroup {
 public:
  /// `cluster` null or of size 1: this process alone (an own single-process cluster).
  explicit NodeGroup(Cluster* cluster);

  /// The transport.
  Cluster& cluster() { return *cluster_; }
  /// Rank of this node, number of nodes, whether there are several, whether this is rank 0.
  int rank() const { return cluster_->rank(); }
  int size() const { return cluster_->size(); }
  bool multi() const { return cluster_->size() > 1; }
  bool is_root() const { return cluster_->rank() == 0; }

  /// Sum over nodes (collective).
  index_t sum(index_t local);
  double sum(double local);
  /// True on every node when `local` is true on any (collective).
  bool any(bool local);
  /// `local` alive devices of this node placed among all nodes' (collective).
  NodeSpan span(index_t local);
  /// This node's fraction of the job's merge weight: local_total / sum of all nodes' totals
  /// (0 when its own is 0). `trained` becomes true on every node when any node trained
  /// (collective; both counts travel in one reduction).
  double merge_share(double local_total, bool* trained);

  /// The run's stop decision: rank 0's `root_code` (-1 = go on), or `interrupt_code` on every
  /// node when any node was interrupted (collective).
  int agree_stop(int root_code, bool interrupted, int interrupt_code);
  /// Rank 0's `value` on every node (collective).
  double from_root(double value);

 private:
  std::unique_ptr<Cluster> own_;
  Cluster* cluster_;
};

}  // namespace hetsgd
