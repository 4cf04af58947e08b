// Shortlist::select's candidate set (kernels/cpu/shortlist.h) at label counts whose ids need
// one, two and three passes of its radix sort: distinct ascending ids, every positive among
// them with weight 1 and its slot, the uniform-only draws with the ratio weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/random.h"
#include "kernels/cpu/shortlist.h"

namespace hetsgd::cpu {
namespace {

CsrBatch labels_batch(index_t num_labels, index_t rows, int per_row, std::uint64_t seed) {
  SplitMix64 rng(seed);
  CsrBatch b;
  b.num_features = 4;
  b.num_labels = num_labels;
  for (index_t r = 0; r < rows; ++r) {
    b.x_indices.push_back(static_cast<col_t>(r % 4));
    b.x_values.push_back(1.0f);
    b.x_indptr.push_back(static_cast<index_t>(b.x_indices.size()));
    std::set<col_t> ls;
    // Ids near both ends of the range too, so every radix digit varies.
    ls.insert(static_cast<col_t>(num_labels - 1 - r));
    ls.insert(static_cast<col_t>(r));
    while (static_cast<int>(ls.size()) < per_row) {
      ls.insert(static_cast<col_t>(rng() % static_cast<std::uint64_t>(num_labels)));
    }
    b.y_indices.insert(b.y_indices.end(), ls.begin(), ls.end());
    b.y_indptr.push_back(static_cast<index_t>(b.y_indices.size()));
  }
  return b;
}

class ShortlistSelect : public ::testing::TestWithParam<index_t> {};

TEST_P(ShortlistSelect, CandidatesAreDistinctAscendingWithTheirWeightsAndSlots) {
  const index_t num_labels = GetParam();
  ModelConfig c;
  c.num_features = 4;
  c.num_labels = num_labels;
  c.hidden = {8};
  c.output_layer = OutputLayer::kShortlist;
  c.shortlist.hard_negatives = 0;
  c.shortlist.sampled_negatives = 300;
  c.shortlist.max_positives = 0;  // every positive (cpu_shortlist_positives_test.cpp: fewer)
  Shortlist s(c);
  for (std::int64_t step = 0; step < 3; ++step) {
    const CsrBatch b = labels_batch(num_labels, 64, 20, 11 + static_cast<std::uint64_t>(step));
    const CandidateSet& cand = s.select(b, nullptr, step);
    const std::set<col_t> positives(b.y_indices.begin(), b.y_indices.end());
    ASSERT_EQ(cand.ids.size(), cand.weight.size());
    ASSERT_TRUE(std::is_sorted(cand.ids.begin(), cand.ids.end()));
    ASSERT_EQ(std::adjacent_find(cand.ids.begin(), cand.ids.end()), cand.ids.end());
    const auto fixed = static_cast<index_t>(positives.size());
    const auto total = static_cast<index_t>(cand.ids.size());
    ASSERT_GT(total, fixed);  // some draws are not positives
    const float wt = static_cast<float>(static_cast<double>(num_labels - fixed) /
                                        static_cast<double>(total - fixed));
    for (index_t i = 0; i < total; ++i) {
      ASSERT_GE(cand.ids[i], 0);
      ASSERT_LT(cand.ids[i], num_labels);
      EXPECT_EQ(cand.weight[i], positives.count(cand.ids[i]) ? 1.0f : wt) << cand.ids[i];
    }
    ASSERT_EQ(cand.label_slot.size(), b.y_indices.size());
    for (std::size_t p = 0; p < b.y_indices.size(); ++p) {
      ASSERT_EQ(cand.ids[cand.label_slot[p]], b.y_indices[p]) << p;
    }
  }
}

// 2,047 (one 11-bit pass), 670,091 (two) and 5,000,000 labels (three).
INSTANTIATE_TEST_SUITE_P(LabelCounts, ShortlistSelect,
                         ::testing::Values(index_t{2047}, index_t{670091}, index_t{5000000}));

}  // namespace
}  // namespace hetsgd::cpu
