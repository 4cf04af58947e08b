#include "core/engine/node_group.h"

#include <vector>

namespace hetsgd {

NodeGroup::NodeGroup(Cluster* cluster) : cluster_(cluster) {
  if (cluster_ == nullptr) {
    own_ = make_single_cluster();
    cluster_ = own_.get();
  }
}

index_t NodeGroup::sum(index_t local) {
  std::int64_t v = local;
  cluster_->allreduce_sum(&v, 1);
  return v;
}

double NodeGroup::sum(double local) {
  cluster_->allreduce_sum(&local, 1);
  return local;
}

bool NodeGroup::any(bool local) {
  std::int64_t v = local ? 1 : 0;
  cluster_->allreduce_max(&v, 1);
  return v != 0;
}

NodeSpan NodeGroup::span(index_t local) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size()), 0);
  all[static_cast<std::size_t>(rank())] = local;
  cluster_->allreduce_sum(all.data(), size());
  NodeSpan s;
  for (int r = 0; r < size(); ++r) {
    if (r < rank()) s.offset += all[static_cast<std::size_t>(r)];
    s.total += all[static_cast<std::size_t>(r)];
  }
  return s;
}

double NodeGroup::merge_share(double local_total, bool* trained) {
  if (!multi()) return local_total > 0.0 ? 1.0 : 0.0;
  double v[2] = {local_total, *trained ? 1.0 : 0.0};
  cluster_->allreduce_sum(v, 2);
  *trained = v[1] > 0.0;
  return v[0] > 0.0 ? local_total / v[0] : 0.0;
}

int NodeGroup::agree_stop(int root_code, bool interrupted, int interrupt_code) {
  if (!multi()) return interrupted ? interrupt_code : root_code;
  std::int64_t v[2] = {interrupted ? 1 : 0, is_root() ? root_code + 1 : 0};
  cluster_->allreduce_max(v, 2);
  return v[0] != 0 ? interrupt_code : static_cast<int>(v[1]) - 1;
}

double NodeGroup::from_root(double value) {
  cluster_->broadcast(&value, sizeof value, 0);
  return value;
}

}  // namespace hetsgd
