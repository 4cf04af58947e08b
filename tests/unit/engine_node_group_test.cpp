// The cross-node pieces on one process (the MPI runs are in tests/mpi): the global cursor hands
// out exactly the points of the plain one, a claim on it is one remote operation that keeps the
// round's quota and the epoch limit, and one node's collectives are identities.
#include "core/engine/node_group.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cluster_communicator.h"
#include "core/communicator.h"
#include "core/engine/batch_source.h"

namespace hetsgd {
namespace {

TEST(EngineNodeGroup, SharedCursorHandsOutThePlainCursorsPoints) {
  const index_t n = 37;
  BatchSource plain(n, 5), shared(n, 5);
  std::vector<index_t> a, b;
  plain.next(10, &a);
  shared.next(10, &b);
  const std::unique_ptr<Cluster> one = make_single_cluster();
  shared.share(*one);  // from here on the position lives in the cluster's counter
  for (index_t batch : {9, 30, 1, 44}) {  // across three epoch boundaries
    const index_t seen_a = plain.next(batch, &a);
    const index_t seen_b = shared.next(batch, &b);
    EXPECT_EQ(a, b) << "batch of " << batch;
    EXPECT_EQ(seen_a, seen_b);
    shared.settle();
    EXPECT_EQ(plain.consumed(), shared.consumed());
  }
  plain.requeue({3, 4});
  shared.requeue({3, 4});
  const BatchSourceState sa = plain.state(), sb = shared.state();
  EXPECT_EQ(sa.epoch, sb.epoch);
  EXPECT_EQ(sa.position, sb.position);
  EXPECT_EQ(sa.consumed, sb.consumed);
  EXPECT_EQ(sa.permutation, sb.permutation);
  EXPECT_EQ(sa.requeued, sb.requeued);
}

// Counts the remote operations a shared cursor makes (fetch_add is the only one-sided call).
class CountingCluster final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* name() const override { return "counting"; }
  void allreduce_sum(float* d, index_t n) override { one_->allreduce_sum(d, n); }
  void allreduce_sum(double* d, index_t n) override { one_->allreduce_sum(d, n); }
  void allreduce_sum(std::int64_t* d, index_t n) override { one_->allreduce_sum(d, n); }
  void allreduce_max(std::int64_t* d, index_t n) override { one_->allreduce_max(d, n); }
  void broadcast(void* d, std::size_t bytes, int root) override { one_->broadcast(d, bytes, root); }
  std::vector<std::string> allgather(const std::string& mine) override {
    return one_->allgather(mine);
  }
  std::vector<std::string> gather_to_root(const std::string& mine) override {
    return one_->gather_to_root(mine);
  }
  void barrier() override {}
  std::int64_t fetch_add(SharedCounter c, std::int64_t delta) override {
    ++trips;
    return one_->fetch_add(c, delta);
  }
  int trips = 0;

 private:
  std::unique_ptr<Cluster> one_ = make_single_cluster();
};

TEST(EngineNodeGroup, QuotaEndsTheRoundOnceHandedOutAndTakesBackFailedBatches) {
  BatchSource source(1000, 3);
  std::vector<index_t> rows;
  index_t seen = 0;
  for (int round = 0; round < 2; ++round) {  // each round starts where the last one's claims ended
    source.begin_round(100);
    EXPECT_TRUE(source.claim(60, &rows, &seen));
    std::vector<index_t> first = rows;
    EXPECT_TRUE(source.claim(60, &rows, &seen));  // 60 < 100 handed out: may overshoot a batch
    std::vector<index_t> second = rows;
    EXPECT_FALSE(source.claim(60, &rows, &seen));
    source.release(first);
    source.release(second);  // both failed: their points are open again
    EXPECT_TRUE(source.claim(60, &rows, &seen));
    EXPECT_EQ(rows, first);  // requeued points are served first
    source.release(rows);
  }
}

TEST(EngineNodeGroup, SharedClaimIsOneRemoteOperationAndKeepsQuotaAndLimit) {
  BatchSource plain(50, 9), shared(50, 9);
  CountingCluster cluster;
  shared.share(cluster);
  shared.set_limit(200);
  std::vector<index_t> a, b;
  index_t seen = 0;
  shared.begin_round(100);
  cluster.trips = 0;
  for (int i = 0; i < 2; ++i) {
    plain.next(60, &a);
    ASSERT_TRUE(shared.claim(60, &b, &seen));
    EXPECT_EQ(a, b);
    EXPECT_EQ(seen, 60 * i);
  }
  EXPECT_EQ(cluster.trips, 2) << "one fetch_add per batch";
  // The quota is handed out: the claim moved the counter, so its points wait on this node and
  // are the first of the next round's (no remote operation for them).
  EXPECT_FALSE(shared.claim(60, &b, &seen));
  EXPECT_EQ(cluster.trips, 3);
  EXPECT_FALSE(shared.claim(60, &b, &seen)) << "the node knows the quota is spent";
  EXPECT_EQ(cluster.trips, 3);
  shared.begin_round(100);
  cluster.trips = 0;
  ASSERT_TRUE(shared.claim(10, &b, &seen));  // 10 of the 60 waiting points
  plain.next(10, &a);
  EXPECT_EQ(a, b);
  EXPECT_EQ(cluster.trips, 0);
  ASSERT_TRUE(shared.claim(60, &b, &seen));  // the other 50, then 10 fresh ones
  EXPECT_EQ(b.size(), 60u);
  EXPECT_EQ(cluster.trips, 1);
  EXPECT_FALSE(shared.limit_reached());
  // The epoch limit: the claim that crosses it is cut, and the position stops at 200 exactly.
  ASSERT_TRUE(shared.claim(60, &b, &seen));
  EXPECT_EQ(b.size(), 10u);
  EXPECT_TRUE(shared.limit_reached());
  EXPECT_FALSE(shared.claim(60, &b, &seen));
  shared.settle();
  EXPECT_EQ(shared.consumed(), 200);
}

TEST(EngineNodeGroup, OneNodesCollectivesAreIdentities) {
  NodeGroup nodes(nullptr);
  EXPECT_FALSE(nodes.multi());
  bool trained = true;
  EXPECT_EQ(nodes.merge_share(5.0, &trained), 1.0);
  EXPECT_TRUE(trained);
  EXPECT_EQ(nodes.agree_stop(-1, false, 4), -1);
  EXPECT_EQ(nodes.agree_stop(-1, true, 4), 4);
  const NodeSpan span = nodes.span(3);
  EXPECT_EQ(span.offset, 0);
  EXPECT_EQ(span.total, 3);
}

// The centre of a run across nodes is merged in host memory on every node, whatever the node
// communicator offers: the cluster communicator offers no store of its own.
TEST(EngineNodeGroup, ClusterCommunicatorKeepsTheCentreOnTheHost) {
  const std::unique_ptr<Communicator> node = make_host_communicator();
  const std::unique_ptr<Cluster> one = make_single_cluster();
  ClusterCommunicator comm(*node, *one);
  EXPECT_STREQ(comm.name(), "cluster");
  EXPECT_EQ(comm.make_centre_store(), nullptr);
}

}  // namespace
}  // namespace hetsgd
