// How Cluster::gather_to_root() cuts a rank's bytes into messages whose lengths fit an MPI
// count, at any total size, and how its bound is set (HETSGD_GATHER_CHUNK). The MPI transfer
// itself runs under mpirun (tests/mpi/mpi_train_test.cpp: MpiTrain.CheckpointGathersInChunks).
#include "core/cluster/gather_chunks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/error.h"

namespace hetsgd {
namespace {

// Walks every chunk of `total` bytes: they must tile [0, total) in order, each non-empty and
// at most `bound` long. Returns the number walked.
std::uint64_t walk(std::uint64_t total, std::uint64_t bound) {
  const std::uint64_t n = chunk_count(total, bound);
  std::uint64_t next = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    const ByteChunk c = chunk_at(total, bound, k);
    EXPECT_EQ(c.offset, next) << "chunk " << k;
    EXPECT_GE(c.bytes, 1) << "chunk " << k;
    EXPECT_LE(static_cast<std::uint64_t>(c.bytes), bound) << "chunk " << k;
    if (k + 1 < n) {
      EXPECT_EQ(static_cast<std::uint64_t>(c.bytes), bound) << "chunk " << k;
    }
    next = c.offset + static_cast<std::uint64_t>(c.bytes);
  }
  EXPECT_EQ(next, total);
  return n;
}

TEST(GatherChunks, ChunksTileTheMessage) {
  EXPECT_EQ(walk(0, 4096), 0u);
  EXPECT_EQ(walk(1, 4096), 1u);
  EXPECT_EQ(walk(4096, 4096), 1u);
  EXPECT_EQ(walk(4097, 4096), 2u);
  EXPECT_EQ(chunk_at(4097, 4096, 1).bytes, 1);
  EXPECT_EQ(walk(10, 1), 10u);
  EXPECT_EQ(walk(3 * 4096 + 5, 4096), 4u);
}

// Past 2 GiB a single MPI count overflows; in chunks every length stays an int.
TEST(GatherChunks, TotalsPastTwoGibStayWithinIntCounts) {
  const std::uint64_t five_gib = std::uint64_t{5} << 30;
  EXPECT_EQ(walk(five_gib, kDefaultGatherChunk), 20u);
  EXPECT_EQ(walk(five_gib + 3, kDefaultGatherChunk), 21u);
  EXPECT_EQ(chunk_at(five_gib + 3, kDefaultGatherChunk, 20).bytes, 3);
  // At the largest bound the chunk lengths are INT_MAX, and offsets run past 4 GiB.
  EXPECT_EQ(walk(five_gib, kMaxGatherChunk), 3u);
  const ByteChunk last = chunk_at(five_gib, kMaxGatherChunk, 2);
  EXPECT_EQ(last.offset, 2 * kMaxGatherChunk);
  EXPECT_EQ(static_cast<std::uint64_t>(last.bytes), five_gib - 2 * kMaxGatherChunk);
  EXPECT_EQ(static_cast<std::uint64_t>(std::numeric_limits<int>::max()), kMaxGatherChunk);
  // The largest total a 64-bit size can say (too many chunks to walk): no overflow in the
  // count or the last chunk.
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t n = chunk_count(huge, kDefaultGatherChunk);
  EXPECT_EQ(n, huge / kDefaultGatherChunk + 1);
  const ByteChunk end = chunk_at(huge, kDefaultGatherChunk, n - 1);
  EXPECT_EQ(end.offset, (n - 1) * kDefaultGatherChunk);
  EXPECT_EQ(static_cast<std::uint64_t>(end.bytes), kDefaultGatherChunk - 1);
}

TEST(GatherChunks, ABoundOutsideIntCountsOrAChunkPastTheEndIsRefused) {
  EXPECT_THROW(chunk_count(10, 0), InvalidArgument);
  EXPECT_THROW(chunk_count(10, kMaxGatherChunk + 1), InvalidArgument);
  EXPECT_THROW(chunk_at(10, 4, 3), InvalidArgument);
  EXPECT_THROW(chunk_at(0, 4, 0), InvalidArgument);
}

TEST(GatherChunks, TheBoundParsesBytesWithSuffixes) {
  EXPECT_EQ(parse_gather_chunk("4096"), 4096u);
  EXPECT_EQ(parse_gather_chunk("4K"), 4096u);
  EXPECT_EQ(parse_gather_chunk("4k"), 4096u);
  EXPECT_EQ(parse_gather_chunk("256M"), kDefaultGatherChunk);
  EXPECT_EQ(parse_gather_chunk("1G"), std::uint64_t{1} << 30);
  EXPECT_EQ(parse_gather_chunk("2147483647"), kMaxGatherChunk);
  for (const char* bad :
       {"", "0", "0K", "-1", "abc", "4KB", "4 K", "2G", "2147483648", "99999999999", "1.5M"}) {
    try {
      parse_gather_chunk(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("HETSGD_GATHER_CHUNK='" + std::string(bad) + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("2147483647"), std::string::npos) << m;
    }
  }
}

TEST(GatherChunks, TheEnvironmentSetsTheBound) {
  ::unsetenv("HETSGD_GATHER_CHUNK");
  EXPECT_EQ(gather_chunk_from_env(), kDefaultGatherChunk);
  ::setenv("HETSGD_GATHER_CHUNK", "", 1);
  EXPECT_EQ(gather_chunk_from_env(), kDefaultGatherChunk);
  ::setenv("HETSGD_GATHER_CHUNK", "8K", 1);
  EXPECT_EQ(gather_chunk_from_env(), 8192u);
  ::setenv("HETSGD_GATHER_CHUNK", "lots", 1);
  EXPECT_THROW(gather_chunk_from_env(), InvalidArgument);
  ::unsetenv("HETSGD_GATHER_CHUNK");
}

// One process: rank 0 gathers its own bytes, and no message is sent.
TEST(GatherChunks, OneProcessGathersItsOwnBytes) {
  const std::unique_ptr<Cluster> one = make_single_cluster();
  const std::string bytes(10000, 'x');
  const std::vector<std::string> all = one->gather_to_root(bytes);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], bytes);
  EXPECT_EQ(one->gathered_chunks(), 0);
}

}  // namespace
}  // namespace hetsgd
