#include "core/cluster/cross_rank_sum.h"

#include <set>
#include <string>

#include "core/error.h"

namespace hetsgd {
namespace {

class HostCrossRankSum final : public CrossRankSum {
 public:
  explicit HostCrossRankSum(Cluster& cluster) : cluster_(cluster) {}

  const char* name() const override { return "mpi"; }

  void sum_host(float* data, index_t n) override { cluster_.allreduce_sum(data, n); }

  void sum_gradients(const std::vector<Device*>& devices) override {
    const index_t n = devices[0]->layout().total();
    grad_.resize(static_cast<std::size_t>(n));
    devices[0]->read_gradient(grad_.data());
    cluster_.allreduce_sum(grad_.data(), n);
    for (Device* d : devices) d->write_gradient(grad_.data());
  }

 private:
  Cluster& cluster_;
  std::vector<float> grad_;
};

}  // namespace

std::unique_ptr<CrossRankSum> make_host_cross_rank_sum(Cluster& cluster) {
  return std::make_unique<HostCrossRankSum>(cluster);
}

std::unique_ptr<CrossRankSum> choose_cross_rank_sum(Cluster& cluster, const CrossRankOffer& offer) {
  // One rank without an offer (a CPU device, a build without NCCL) keeps the whole job on the
  // host transport, and so do two ranks on one GPU (NCCL refuses a GPU shared by two ranks).
  const std::vector<std::string> keys = cluster.allgather(offer.offered() ? offer.key : "");
  const std::set<std::string> distinct(keys.begin(), keys.end());
  if (distinct.count("") != 0 || distinct.size() != keys.size()) {
    return make_host_cross_rank_sum(cluster);
  }
  // Every rank is past the agreement: a maker must now succeed or throw, never fall back
  // alone.
  std::unique_ptr<CrossRankSum> s = offer.make(cluster);
  if (!s) HETSGD_FAIL("a cross-rank sum maker returned nothing after every rank offered one");
  return s;
}

}  // namespace hetsgd
