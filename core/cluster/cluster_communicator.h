/// \file core/cluster/cluster_communicator.h
/// The two-level communicator of a run across nodes (core/cluster/README.md): the node's own
/// communicator (host, NCCL, one shared GPU) reduces its devices, then a CrossRankSum sums the
/// nodes (core/cluster/cross_rank_sum.h): NCCL between the ranks' GPUs when every rank's node
/// communicator offers it (kernels/cuda: all devices CUDA, NCCL built, one GPU per rank for
/// the step), else one MPI all-reduce of a host buffer, the same on every rank.
///
/// average_params() expects weights that already carry the node's share of the job
/// (NodeGroup::merge_share: they sum to this node's fraction, not to 1), so the sum over nodes
/// of the node averages is the job's normalised average, on every node. allreduce_gradients()
/// sums the node's gradients, then the nodes'. The centre update runs on every node with the
/// same inputs, so every node holds the same centre without another broadcast: the engine's
/// host centre store (core/engine/host_centre_store.h) over this communicator, dense across
/// nodes (merges_rows()).
/// Calls are collective: every node makes them in the same order.
#pragma once

#include <memory>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cross_rank_sum.h"
#include "core/communicator.h"

namespace hetsgd {

/// A node communicator plus the sum over the cluster's ranks.
class ClusterCommunicator final : public Communicator {
 public:
  /// Non-owning: `node` and `cluster` outlive this object. Collective: the ranks agree on the
  /// cross-rank strategy (choose_cross_rank_sum with node.cross_rank_offer()).
  ClusterCommunicator(Communicator& node, Cluster& cluster);
  /// With an explicit strategy (owned; tests). Not collective.
  ClusterCommunicator(Communicator& node, Cluster& cluster, std::unique_ptr<CrossRankSum> across);

  void average_params(const std::vector<Device*>& devices, const std::vector<double>& weights,
                      float* average) override;
  void broadcast_params(const std::vector<Device*>& devices, const float* params) override;
  void allreduce_gradients(const std::vector<Device*>& devices,
                           const std::vector<double>& weights) override;
  const char* name() const override { return "cluster"; }
  /// Row merges would see only this node's touched rows: dense across nodes.
  bool merges_rows() const override { return cluster_.size() <= 1 && node_.merges_rows(); }
  /// The cross-rank strategy in use: "mpi" or "nccl".
  const char* cross_rank_name() const { return across_->name(); }

 private:
  Communicator& node_;
  Cluster& cluster_;
  std::unique_ptr<CrossRankSum> across_;
};

}  // namespace hetsgd
