// The cross-rank step a backend offers to a run across processes: nothing for CPU devices (the
// job stays on MPI), NCCL for CUDA devices in builds with NCCL. On the GPU the strategy runs
// for real on a one-rank cluster (one ncclCommInitRank of one rank): the host sum is the
// identity and device 0's gradient lands on every device. Several ranks need mpirun and one
// GPU per rank, which this suite does not start.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cross_rank_sum.h"
#include "core/communicator.h"
#include "tests/backend/parity_fixture.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 41;

class CrossRankOfferTest : public DeviceParity {};

TEST_P(CrossRankOfferTest, CudaDevicesOfferNcclAndItSumsOnTheGpu) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto a = dut(c), b = dut(c);
  const std::vector<Device*> devs = {a.get(), b.get()};
  const std::unique_ptr<Communicator> node = make_communicator(devs);
  const CrossRankOffer offer = node->cross_rank_offer();
  const bool nccl = build_info().find("NCCL=ON") != std::string::npos;
  if (GetParam().kind == DeviceKind::kCpu || !nccl) {
    EXPECT_FALSE(offer.offered());
    return;
  }
  ASSERT_TRUE(offer.offered());
  EXPECT_EQ(offer.key.rfind("gpu-", 0), 0u) << offer.key;
  const std::unique_ptr<Cluster> one = make_single_cluster();
  const std::unique_ptr<CrossRankSum> s = choose_cross_rank_sum(*one, offer);
  EXPECT_STREQ(s->name(), "nccl");

  std::vector<float> h = {1.0f, -2.5f, 3.0f};
  s->sum_host(h.data(), 3);
  EXPECT_EQ(h, (std::vector<float>{1.0f, -2.5f, 3.0f}));

  a->gradient(small_batch(c, 16, kSeed + 1), 1.0f);
  b->gradient(small_batch(c, 16, kSeed + 2), 1.0f);
  const size_t n = static_cast<size_t>(a->layout().total());
  std::vector<float> want(n), got(n);
  a->read_gradient(want.data());
  b->read_gradient(got.data());
  ASSERT_NE(want, got);
  s->sum_gradients(devs);
  b->read_gradient(got.data());
  EXPECT_EQ(got, want);
  a->read_gradient(got.data());
  EXPECT_EQ(got, want);
}

HETSGD_INSTANTIATE_ALL_DEVICES(CrossRankOfferTest);

}  // namespace
}  // namespace hetsgd::test
