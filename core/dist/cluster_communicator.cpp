#include "core/dist/cluster_communicator.h"

#include "core/error.h"

namespace hetsgd {

ClusterCommunicator::ClusterCommunicator(Communicator& node, Cluster& cluster)
    : node_(node), cluster_(cluster) {}

void ClusterCommunicator::average_params(const std::vector<Device*>& devices,
                                         const std::vector<double>& weights, float* average) {
  HETSGD_CHECK(!devices.empty(), "average_params: no devices");
  node_.average_params(devices, weights, average);
  // Float sums over a handful of nodes: the node averages are already reduced in double.
  cluster_.allreduce_sum(average, devices[0]->layout().total());
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
  const index_t n = devices[0]->layout().total();
  grad_.resize(static_cast<std::size_t>(n));
  devices[0]->read_gradient(grad_.data());
  cluster_.allreduce_sum(grad_.data(), n);
  for (Device* d : devices) d->write_gradient(grad_.data());
}

}  // namespace hetsgd
