// Shortlist::select's candidate set (kernels/cpu/shortlist.h) at label counts whose ids need
// one, two and three passes of its radix sort: distinct ascending ids, every positive among
// them with weight 1 and its slot, the uniform-only draws with the ratio weight; and which of
// a long row's labels a step trains on (ShortlistConfig::max_positives).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/random.h"
#include "kernels/cpu/shortlist.h"
#include "tests/common/small_models.h"

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

// A shortlist without an index: positives (at most `max_positives` a row, 0 = all) and
// `sampled` uniform draws.
ModelConfig shortlist_config(index_t num_labels, int sampled, int max_positives) {
  ModelConfig c = test::fixed_model();
  c.num_features = 4;
  c.num_labels = num_labels;
  c.hidden = {8};
  c.output_layer = OutputLayer::kShortlist;
  c.shortlist.hard_negatives = 0;
  c.shortlist.sampled_negatives = sampled;
  c.shortlist.max_positives = max_positives;
  return c;
}

class ShortlistSelect : public ::testing::TestWithParam<index_t> {};

TEST_P(ShortlistSelect, CandidatesAreDistinctAscendingWithTheirWeightsAndSlots) {
  const index_t num_labels = GetParam();
  Shortlist s(shortlist_config(num_labels, 300, 0), 1);  // every positive (fewer: below)
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

// `rows` rows with `per_row[r % per_row.size()]` labels each, rows' labels disjoint.
CsrBatch disjoint_batch(const std::vector<int>& per_row, index_t rows, index_t* num_labels) {
  CsrBatch b;
  b.num_features = 4;
  col_t next = 0;
  for (index_t r = 0; r < rows; ++r) {
    b.x_indices.push_back(static_cast<col_t>(r % 4));
    b.x_values.push_back(1.0f);
    b.x_indptr.push_back(static_cast<index_t>(b.x_indices.size()));
    for (int i = 0; i < per_row[static_cast<size_t>(r) % per_row.size()]; ++i) {
      b.y_indices.push_back(next++);
    }
    b.y_indptr.push_back(static_cast<index_t>(b.y_indices.size()));
  }
  *num_labels = next + 100;
  b.num_labels = *num_labels;
  return b;
}

TEST(ShortlistPositives, ALongRowTrainsOnMaxPositivesOfItsLabelsDrawnAnewEachStep) {
  index_t num_labels = 0;
  const CsrBatch b = disjoint_batch({10, 3, 4}, 6, &num_labels);  // rows 0 and 3 have 10
  Shortlist s(shortlist_config(num_labels, 0, 4), 1);
  Shortlist again(shortlist_config(num_labels, 0, 4), 1);
  std::vector<int> times_used(b.y_indices.size(), 0);
  std::set<std::vector<std::uint8_t>> draws;
  constexpr int kSteps = 40;
  for (std::int64_t step = 0; step < kSteps; ++step) {
    const CandidateSet& cand = s.select(b, nullptr, step);
    ASSERT_EQ(cand.label_used.size(), b.y_indices.size());
    EXPECT_EQ(again.select(b, nullptr, step).label_used, cand.label_used) << "step " << step;
    draws.insert(cand.label_used);
    std::set<col_t> used_ids;
    for (index_t r = 0; r < b.rows(); ++r) {
      int used = 0;
      for (index_t p = b.y_indptr[r]; p < b.y_indptr[r + 1]; ++p) used += cand.label_used[p];
      EXPECT_EQ(used, std::min<index_t>(4, b.y_indptr[r + 1] - b.y_indptr[r])) << "row " << r;
    }
    for (std::size_t p = 0; p < b.y_indices.size(); ++p) {
      times_used[p] += cand.label_used[p];
      if (cand.label_used[p] != 0) {
        used_ids.insert(b.y_indices[p]);
        ASSERT_GE(cand.label_slot[p], 0);
        EXPECT_EQ(cand.ids[cand.label_slot[p]], b.y_indices[p]);
      } else {  // no other row has it and nothing is sampled: it is not a candidate
        EXPECT_EQ(cand.label_slot[p], -1) << p;
      }
    }
    // The candidates are exactly the drawn positives.
    EXPECT_EQ(std::set<col_t>(cand.ids.begin(), cand.ids.end()), used_ids);
  }
  EXPECT_GT(draws.size(), kSteps / 2u);  // the draw changes with the step
  for (std::size_t p = 0; p < times_used.size(); ++p) {
    EXPECT_GT(times_used[p], 0) << "label entry " << p << " never trained on";
  }
}

TEST(ShortlistPositives, ZeroOrRowsWithinTheBoundUseEveryPositive) {
  index_t num_labels = 0;
  const CsrBatch b = disjoint_batch({10, 3}, 4, &num_labels);
  Shortlist all(shortlist_config(num_labels, 0, 0), 1);
  EXPECT_TRUE(all.select(b, nullptr, 1).label_used.empty());
  Shortlist wide(shortlist_config(num_labels, 0, 10), 1);
  EXPECT_TRUE(wide.select(b, nullptr, 1).label_used.empty());
  EXPECT_EQ(wide.candidates().ids.size(), b.y_indices.size());
}

}  // namespace
}  // namespace hetsgd::cpu
