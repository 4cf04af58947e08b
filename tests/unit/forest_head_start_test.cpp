// Trees grown ahead (LabelForest::grow_ahead, ForestHeadStart): however many a forest's
// growth is handed, it makes the forest it makes without them.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "core/engine/forest_head_start.h"
#include "core/forest/label_forest.h"
#include "core/random.h"
#include "tests/common/topic_rows.h"

namespace hetsgd {
namespace {

// Rows of 6 topics, labels {2g, 2g + 1} and, on every third row, a label shared by all.
Dataset rows_of_topics(index_t rows, std::uint64_t seed) {
  Dataset d;
  d.num_features = 8 * 6;
  d.num_labels = 13;
  SplitMix64 rng(seed);
  for (index_t r = 0; r < rows; ++r) {
    const auto g = static_cast<col_t>(r % 6);
    std::vector<col_t> labels = {2 * g, 2 * g + 1};
    if (r % 3 == 0) labels.push_back(12);
    test::add_topic_row(d, g, rng, labels);
  }
  return d;
}

ForestOptions options(int trees) {
  ForestOptions o;
  o.trees = trees;
  o.arity = 4;
  o.leaf_rows = 5;
  o.label_dims = 16;
  return o;
}

std::string bytes_of(const LabelForest& f) {
  std::string b;
  f.serialize(&b);
  return b;
}

TEST(ForestHeadStart, TreesGrownAheadMakeTheSameForest) {
  const Dataset train = rows_of_topics(400, 1);
  const std::atomic<bool> go{false};
  ForestOptions o = options(12);
  const std::string plain = bytes_of(LabelForest::grow(train, o));
  for (int ahead : {1, 5, 12, 20}) {  // 20: more than the forest holds
    std::vector<LabelForest> trees = LabelForest::grow_ahead(train, o, ahead, go);
    ASSERT_EQ(trees.size(), static_cast<size_t>(ahead));
    for (const LabelForest& t : trees) EXPECT_EQ(t.trees(), 1);
    EXPECT_EQ(bytes_of(LabelForest::grow(train, o, nullptr, std::move(trees))), plain)
        << ahead << " trees ahead";
  }
  // Within a byte budget and after a pilot, the trees ahead stand in for the probe's and the
  // pilot's.
  o.max_bytes = LabelForest::grow(train, o).bytes() * 2 / 3;
  o.pilot_share = 1.0 / 3.0;
  int pilot_saw = 0;
  o.go_on = [&](const LabelForest& first, int) {
    pilot_saw = first.trees();
    return true;
  };
  const std::string budget = bytes_of(LabelForest::grow(train, o));
  const int seen = pilot_saw;
  pilot_saw = 0;
  EXPECT_EQ(
      bytes_of(LabelForest::grow(train, o, nullptr, LabelForest::grow_ahead(train, o, 6, go))),
      budget);
  EXPECT_EQ(pilot_saw, seen);
  EXPECT_LT(bytes_of(LabelForest::grow(train, o)).size(), plain.size());
}

TEST(ForestHeadStart, AHaltedGrowthGrowsNothingMore) {
  const Dataset train = rows_of_topics(200, 2);
  const std::atomic<bool> halted{true};
  EXPECT_TRUE(LabelForest::grow_ahead(train, options(8), 8, halted).empty());
  const std::atomic<bool> go{false};
  EXPECT_TRUE(LabelForest::grow_ahead(train, options(8), 0, go).empty());
}

TEST(ForestHeadStart, ItsTreesWhereverItWasHaltedMakeTheSameForest) {
  const Dataset train = rows_of_topics(3000, 3);
  const ForestOptions o = options(10);
  const std::string plain = bytes_of(LabelForest::grow(train, o));
  // Halted at once, and halted after its first tree or more: a prefix of the forest's trees
  // either way, whatever the thread managed.
  for (int round = 0; round < 2; ++round) {
    ForestHeadStart head(train, o, 10);
    if (round == 1) {
      const std::atomic<bool> go{false};
      LabelForest::grow_ahead(train, o, 1, go);  // a tree's time on this thread
    }
    std::vector<LabelForest> trees = head.finish();
    EXPECT_LE(trees.size(), 10u);
    EXPECT_TRUE(head.finish().empty()) << "its trees are handed over once";
    EXPECT_EQ(&head.rows(), &train);
    EXPECT_EQ(bytes_of(LabelForest::grow(train, o, nullptr, std::move(trees))), plain);
  }
}

}  // namespace
}  // namespace hetsgd
