// The cross-rank step of ClusterCommunicator as a strategy: which one the ranks agree on, and
// that the host strategy does what the communicator did before (read device 0's node sum, add
// it over the ranks, write it to every device). A two-rank Cluster is faked on one process:
// the other rank mirrors this one (its sums double), and its offer key is set by the test.
#include "core/cluster/cross_rank_sum.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cluster_communicator.h"
#include "core/communicator.h"
#include "core/error.h"
#include "datasets/synthetic.h"
#include "kernels/registry.h"
#include "tests/common/small_models.h"
#include "tests/unit/mirrored_cluster.h"

namespace hetsgd {
namespace {

using TwoRanks = test::MirroredTwoRanks;

// A device strategy that only records that it was made.
class Marker final : public CrossRankSum {
 public:
  const char* name() const override { return "device"; }
  void sum_host(float*, index_t) override {}
  void sum_gradients(const std::vector<Device*>&) override {}
};

CrossRankOffer offer(const std::string& key, int* made) {
  CrossRankOffer o;
  o.key = key;
  o.make = [made](Cluster&) -> std::unique_ptr<CrossRankSum> {
    ++*made;
    return std::make_unique<Marker>();
  };
  return o;
}

TEST(CrossRankSum, DeviceStrategyWhenEveryRankOffersADistinctDevice) {
  TwoRanks cluster("gpu-b");
  int made = 0;
  const auto s = choose_cross_rank_sum(cluster, offer("gpu-a", &made));
  EXPECT_STREQ(s->name(), "device");
  EXPECT_EQ(made, 1);
  EXPECT_EQ(cluster.allgathers, 1);
}

TEST(CrossRankSum, HostWhenThisRankOffersNothing) {
  TwoRanks cluster("gpu-b");
  const auto s = choose_cross_rank_sum(cluster, CrossRankOffer{});
  EXPECT_STREQ(s->name(), "mpi");
  EXPECT_EQ(cluster.allgathers, 1);  // it still takes part in the agreement
}

// Two ranks, the other offering `theirs` and this one `mine`, choose the host strategy and
// never make this rank's offer.
void expect_host_unmade(const std::string& theirs, const std::string& mine) {
  TwoRanks cluster(theirs);
  int made = 0;
  const auto s = choose_cross_rank_sum(cluster, offer(mine, &made));
  EXPECT_STREQ(s->name(), "mpi");
  EXPECT_EQ(made, 0);
}

TEST(CrossRankSum, HostOnEveryRankWhenAnotherRankOffersNothing) {
  // E.g. the other rank has a CPU device. Never made alone: the other rank would not join
  // NCCL's bootstrap.
  expect_host_unmade("", "gpu-a");
}

TEST(CrossRankSum, HostWhenTwoRanksShareOneDevice) { expect_host_unmade("gpu-a", "gpu-a"); }

TEST(CrossRankSum, AnOfferWithoutKeyIsNoOffer) { expect_host_unmade("gpu-b", ""); }

TEST(CrossRankSum, AMakerReturningNothingAfterTheAgreementThrows) {
  TwoRanks cluster("gpu-b");
  CrossRankOffer o;
  o.key = "gpu-a";
  o.make = [](Cluster&) { return std::unique_ptr<CrossRankSum>(); };
  EXPECT_THROW(choose_cross_rank_sum(cluster, o), Error);
}

ModelConfig tiny() {
  ModelConfig c = test::mlp(50, 12, {8});
  c.seed = 3;
  return c;
}

using test::grad_of;

// The old ClusterCommunicator::allreduce_gradients, spelled out: device 0's gradient, summed
// over the ranks (doubled by the mirror), on every device.
TEST(CrossRankSum, HostStrategyWritesTheRankSumOfDeviceZerosGradientEverywhere) {
  const ModelConfig c = tiny();
  auto a = make_device(DeviceId::cpu(0), c), b = make_device(DeviceId::cpu(1), c);
  a->gradient(datasets::power_law_batch(16, c.num_labels, 5, c.num_features, 6.0), 1.0f);
  b->gradient(datasets::power_law_batch(16, c.num_labels, 6, c.num_features, 6.0), 1.0f);
  std::vector<float> want = grad_of(*a);
  ASSERT_NE(want, grad_of(*b));
  for (float& v : want) v *= 2.0f;
  TwoRanks cluster("");
  const auto s = make_host_cross_rank_sum(cluster);
  s->sum_gradients({a.get(), b.get()});
  EXPECT_EQ(grad_of(*a), want);
  EXPECT_EQ(grad_of(*b), want);
  std::vector<float> h = {1.0f, -2.5f, 3.0f};
  s->sum_host(h.data(), 3);
  EXPECT_EQ(h, (std::vector<float>{2.0f, -5.0f, 6.0f}));
  EXPECT_EQ(cluster.float_sums, (std::vector<index_t>{a->layout().total(), 3}));
}

// CPU devices: the registry's communicator offers nothing, so the job stays on MPI; the
// communicator sends both sums through the strategy it was given, the whole model each.
TEST(CrossRankSum, ClusterCommunicatorSumsThroughItsStrategy) {
  const ModelConfig c = tiny();
  auto a = make_device(DeviceId::cpu(0), c), b = make_device(DeviceId::cpu(1), c);
  const std::vector<Device*> devs = {a.get(), b.get()};
  const std::unique_ptr<Communicator> node = make_communicator(devs);
  EXPECT_FALSE(node->cross_rank_offer().offered());
  TwoRanks cluster("gpu-b");
  const ClusterCommunicator chosen(*node, cluster);
  EXPECT_STREQ(chosen.cross_rank_name(), "mpi");

  // The node average of two equal replicas is the replica; the fake peer doubles it.
  ClusterCommunicator across(*node, cluster, make_host_cross_rank_sum(cluster));
  const index_t n = a->layout().total();
  std::vector<float> p(static_cast<std::size_t>(n)), avg(p.size());
  a->read_params(p.data());
  across.average_params(devs, {0.5, 0.5}, avg.data());
  for (std::size_t k = 0; k < p.size(); ++k) ASSERT_FLOAT_EQ(avg[k], 2.0f * p[k]) << k;
  ASSERT_EQ(cluster.float_sums.size(), 1u);
  EXPECT_EQ(cluster.float_sums.back(), n);
}

}  // namespace
}  // namespace hetsgd
