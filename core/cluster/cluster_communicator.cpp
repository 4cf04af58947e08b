#include "core/cluster/cluster_communicator.h"

#include <utility>

#include "core/error.h"

namespace hetsgd {

ClusterCommunicator::ClusterCommunicator(Communicator& node, Cluster& cluster)
    : node_(node),
      cluster_(cluster),
      across_(choose_cross_rank_sum(cluster, node.cross_rank_offer())) {}

ClusterCommunicator::ClusterCommunicator(Communicator& node, Cluster& cluster,
                                         std::unique_ptr<CrossRankSum> across)
    : node_(node), cluster_(cluster), across_(std::move(across)) {
  HETSGD_CHECK(across_ != nullptr, "ClusterCommunicator: no cross-rank strategy");
}

void ClusterCommunicator::average_params(const std::vector<Device*>& devices,
                                         const std::vector<double>& weights, float* average) {
  HETSGD_CHECK(!devices.empty(), "average_params: no devices");
  node_.average_params(devices, weights, average);
  // Float sums over a handful of nodes: the node averages are already reduced in double.
  across_->sum_host(average, devices[0]->layout().total());
}

void ClusterCommunicator::broadcast_params(const std::vector<Device*>& devices,
                                           const float* params) {
  node_.broadcast_params(devices, params);
}

void ClusterCommunicator::allreduce_gradients(const std::vector<Device*>& devices,
                                              const std::vector<double>& weights) {
  HETSGD_CHECK(!devices.empty(), "allreduce_gradients: no devices");
  node_.allreduce_gradients(devices, weights);
  // Every device of the node now holds the node's sum: one of them speaks for it.
  across_->sum_gradients(devices);
}

}  // namespace hetsgd
