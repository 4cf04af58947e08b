// The cross-node pieces on one process (the MPI runs are in tests/mpi): the global cursor hands
// out exactly the points of the plain one, the shared quota ends a round where the local one
// did, and one node's collectives are identities.
#include "core/engine/node_group.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/dist/cluster.h"
#include "core/dist/cluster_communicator.h"
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

TEST(EngineNodeGroup, QuotaEndsTheRoundOnceHandedOutAndTakesBackFailedBatches) {
  NodeGroup nodes(nullptr);
  EXPECT_FALSE(nodes.multi());
  for (int round = 0; round < 2; ++round) {  // each round starts where the last one's claims ended
    nodes.begin_quota(100);
    EXPECT_TRUE(nodes.take(60));
    EXPECT_TRUE(nodes.take(60));  // 60 < 100 handed out: the round may overshoot by a batch
    EXPECT_FALSE(nodes.take(60));
    nodes.give_back(60);
    nodes.give_back(60);  // both failed: their points are open again
    EXPECT_TRUE(nodes.take(60));
  }
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
