#include "core/engine/batch_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace hetsgd {
namespace {

TEST(EngineBatchSource, EpochTailCarriesIntoTheNextEpoch) {
  const index_t n = 10;
  BatchSource src(n, 7);
  std::vector<index_t> a, b;
  src.next(7, &a);
  const index_t seen = src.next(7, &b);  // 3 tail points of epoch 0, then 4 of epoch 1
  EXPECT_EQ(seen, 7);
  EXPECT_EQ(src.consumed(), 14);
  const std::vector<index_t> p0 = BatchSource::permutation(n, 7, 0);
  const std::vector<index_t> p1 = BatchSource::permutation(n, 7, 1);
  ASSERT_EQ(b.size(), 7u);
  EXPECT_EQ(std::vector<index_t>(b.begin(), b.begin() + 3),
            std::vector<index_t>(p0.begin() + 7, p0.end()));
  EXPECT_EQ(std::vector<index_t>(b.begin() + 3, b.end()),
            std::vector<index_t>(p1.begin(), p1.begin() + 4));
  EXPECT_NE(p0, p1) << "each epoch must be reshuffled";
}

TEST(EngineBatchSource, ConcurrentPullsVisitEveryPointOncePerEpoch) {
  const index_t n = 1000;
  BatchSource src(n, 3);
  std::mutex m;
  std::vector<index_t> taken;
  std::vector<std::thread> threads;
  // Three "devices" with different batch sizes pull until three epochs are handed out.
  const index_t sizes[3] = {7, 32, 61};
  std::atomic<index_t> handed{0};
  for (index_t b : sizes) {
    threads.emplace_back([&, b] {
      std::vector<index_t> rows;
      for (;;) {
        const index_t start = handed.fetch_add(b);
        if (start >= 3 * n) {
          handed.fetch_sub(b);
          return;
        }
        const index_t take = std::min(b, 3 * n - start);
        src.next(take, &rows);
        std::lock_guard<std::mutex> lock(m);
        taken.insert(taken.end(), rows.begin(), rows.end());
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(static_cast<index_t>(taken.size()), 3 * n);
  std::vector<int> count(n, 0);
  for (index_t r : taken) count[r] += 1;
  for (index_t r = 0; r < n; ++r) ASSERT_EQ(count[r], 3) << "point " << r;
  EXPECT_EQ(src.consumed(), 3 * n);
  EXPECT_DOUBLE_EQ(src.epochs(), 3.0);
}

TEST(EngineBatchSource, RequeuedPointsAreServedFirstAndNotCountedTwice) {
  BatchSource src(100, 1);
  std::vector<index_t> a, b;
  src.next(10, &a);
  src.requeue(a);
  EXPECT_EQ(src.consumed(), 0);
  src.next(15, &b);
  EXPECT_EQ(std::vector<index_t>(b.begin(), b.begin() + 10), a);
  EXPECT_EQ(src.consumed(), 15);
  // The 5 new points continue the permutation right after the 10 requeued ones.
  const std::vector<index_t> p = BatchSource::permutation(100, 1, 0);
  EXPECT_EQ(std::vector<index_t>(b.begin() + 10, b.end()),
            std::vector<index_t>(p.begin() + 10, p.begin() + 15));
}

TEST(EngineBatchSource, RestoredStateContinuesIdentically) {
  BatchSource a(37, 11);
  std::vector<index_t> x, y, rq;
  for (int i = 0; i < 5; ++i) a.next(9, &x);
  a.next(4, &rq);
  a.requeue(rq);
  BatchSource b(a.state());
  for (int i = 0; i < 12; ++i) {
    a.next(13, &x);
    b.next(13, &y);
    ASSERT_EQ(x, y) << "batch " << i;
  }
  EXPECT_EQ(a.consumed(), b.consumed());
}

TEST(EngineBatchSource, PermutationIsDeterministicAndComplete) {
  const auto p = BatchSource::permutation(5000, 42, 3);
  EXPECT_EQ(p, BatchSource::permutation(5000, 42, 3));
  EXPECT_NE(p, BatchSource::permutation(5000, 43, 3));
  std::vector<index_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (index_t i = 0; i < 5000; ++i) ASSERT_EQ(sorted[i], i);
}

TEST(EngineBatchSource, RejectsInconsistentState) {
  BatchSourceState s = BatchSource(10, 1).state();
  s.position = 11;
  EXPECT_THROW(BatchSource{s}, InvalidArgument);
  s = BatchSource(10, 1).state();
  s.permutation.pop_back();
  EXPECT_THROW(BatchSource{s}, InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
