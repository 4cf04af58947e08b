#include "core/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hetsgd {
namespace {

TEST(Metrics, PrecisionAndNdcgFollowXcRepositoryConventions) {
  CsrBatch truth;
  truth.num_labels = 10;
  truth.num_features = 1;
  // row 0: labels {1, 3}; row 1: labels {7}
  truth.x_indptr = {0, 0, 0};
  truth.y_indptr = {0, 2, 3};
  truth.y_indices = {1, 3, 7};
  const col_t topk[10] = {3, 0, 1, 2, 4,   // hits at ranks 0 and 2
                          0, 1, 2, 4, 5};  // no hit
  RankingMetrics m;
  accumulate_ranking(truth, topk, 5, &m);
  finish_ranking(&m);
  EXPECT_DOUBLE_EQ(m.p_at(1), 0.5);
  EXPECT_DOUBLE_EQ(m.p_at(3), (2.0 / 3 + 0) / 2);
  EXPECT_DOUBLE_EQ(m.p_at(5), (2.0 / 5) / 2);
  const double dcg3 = 1.0 + 0.5, idcg3 = 1.0 + 1.0 / std::log2(3.0);
  EXPECT_NEAR(m.ndcg_at(3), dcg3 / idcg3 / 2, 1e-12);
  EXPECT_DOUBLE_EQ(m.ndcg_at(1), 0.5);
}

// recall@j of an approximate top-k: |approx top-j ∩ exact top-j| / |exact top-j|, by hand.
TEST(Metrics, TopkRecallIsTheOverlapOfEachPrefixWithTheExactOne) {
  const col_t exact[10] = {1, 2, 3,  4,  5,    // five labels wanted
                           7, 8, -1, -1, -1};  // two labels wanted
  const col_t approx[10] = {1, 3, 2, 9, 4,     // @1 1/1, @2 {1,3}: 1/2, @3 3/3, @5 4/5
                            8, 7, 5, 6, 4};    // @1 0/1, @2 2/2, @3..@5 2/2
  TopkRecall r;
  accumulate_topk_recall(exact, approx, 2, 5, &r);
  finish_topk_recall(&r);
  EXPECT_EQ(r.rows, 2);
  EXPECT_DOUBLE_EQ(r.at_k(1), 0.5);
  EXPECT_DOUBLE_EQ(r.at_k(2), 0.75);
  EXPECT_DOUBLE_EQ(r.at_k(3), 1.0);
  EXPECT_DOUBLE_EQ(r.at_k(4), (3.0 / 4 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(r.at_k(5), (4.0 / 5 + 1.0) / 2);
}

TEST(Metrics, RowsWithoutLabelsCountAsMisses) {
  CsrBatch truth;
  truth.num_labels = 3;
  truth.num_features = 1;
  truth.x_indptr = {0, 0};
  truth.y_indptr = {0, 0};
  const col_t topk[5] = {0, 1, 2, 0, 0};
  RankingMetrics m;
  accumulate_ranking(truth, topk, 5, &m);
  finish_ranking(&m);
  EXPECT_EQ(m.rows, 1);
  EXPECT_EQ(m.p_at(1), 0.0);
  EXPECT_EQ(m.ndcg_at(5), 0.0);
}

// Hand-computed case: 10 training rows with label counts 9, 3, 1, 0 at A = 0.55, B = 1.5:
// C = (ln 10 - 1) 2.5^0.55, 1/p_l = 1 + C (N_l + 1.5)^-0.55.
TEST(Metrics, PropensityScoredMetricsAreRatiosOfMeansAsInPyxclib) {
  Dataset train;
  train.num_labels = 4;
  train.num_features = 1;
  train.x_indptr.assign(11, 0);
  // label 0 in 9 rows, label 1 in 3, label 2 in 1, label 3 in none
  train.y_indptr = {0, 3, 5, 7, 8, 9, 10, 11, 12, 13, 13};
  train.y_indices = {0, 1, 2, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0};
  const std::vector<float> inv = inverse_propensities(train, PropensityModel{});
  ASSERT_EQ(inv.size(), 4u);
  const double c = (std::log(10.0) - 1.0) * std::pow(2.5, 0.55);
  EXPECT_NEAR(inv[0], 1 + c * std::pow(10.5, -0.55), 1e-6);
  EXPECT_NEAR(inv[0], 1.591587507, 1e-6);
  EXPECT_NEAR(inv[1], 1.942771024, 1e-6);
  EXPECT_NEAR(inv[2], 2.302585093, 1e-6);
  EXPECT_NEAR(inv[3], 2.725134323, 1e-6);

  CsrBatch truth;
  truth.num_labels = 4;
  truth.num_features = 1;
  // row 0: {0, 2}; row 1: {1}; row 2: no label
  truth.x_indptr = {0, 0, 0, 0};
  truth.y_indptr = {0, 2, 3, 3};
  truth.y_indices = {0, 2, 1};
  const col_t topk[15] = {2, 1, 0, 3, 3,   // hits label 2 at rank 0, label 0 at rank 2
                          0, 3, 2, 0, 0,   // no hit
                          0, 1, 2, 3, 0};  // nothing to hit
  RankingMetrics m;
  accumulate_ranking(truth, topk, 5, &m, &inv);
  finish_ranking(&m);
  ASSERT_TRUE(m.has_propensity);
  // PSP@1: row 0 scores 1/p_2 and could score at best 1/p_2; row 1 scores 0 of 1/p_1.
  EXPECT_NEAR(m.psp_at(1), inv[2] / (inv[2] + inv[1]), 1e-6);
  EXPECT_NEAR(m.psp_at(1), 0.542377372, 1e-6);
  // PSP@3: row 0 (1/p_2 + 1/p_0) / 3 of the same best; row 1 0 of 1/p_1 / 3.
  EXPECT_NEAR(m.psp_at(3), (inv[2] + inv[0]) / (inv[2] + inv[0] + inv[1]), 1e-6);
  EXPECT_NEAR(m.psp_at(5), 0.667159536, 1e-6);
  // PSnDCG@3: row 0 (1/p_2 + 1/p_0 / 2) / IDCG_2 against (1/p_2 + 1/p_0 / log2 3) / IDCG_2.
  const double idcg2 = 1.0 + 1.0 / std::log2(3.0);
  const double num = (inv[2] + inv[0] / 2) / idcg2;
  const double den = (inv[2] + inv[0] / std::log2(3.0)) / idcg2 + inv[1];
  EXPECT_NEAR(m.psndcg_at(3), num / den, 1e-6);
  EXPECT_NEAR(m.psndcg_at(5), 0.478492819, 1e-6);
  // recall@k: row 0 1/2 at k = 1, 2/2 from k = 3; rows 1 and 2 zero.
  EXPECT_NEAR(m.recall_at(1), 0.5 / 3, 1e-12);
  EXPECT_NEAR(m.recall_at(3), 1.0 / 3, 1e-12);
  EXPECT_NEAR(m.p_at(1), 1.0 / 3, 1e-12);
}

TEST(Metrics, PropensityModelFollowsTheDataSetFamily) {
  EXPECT_EQ(propensity_model_for("amazon-670k").a, 0.6);
  EXPECT_EQ(propensity_model_for("/data/amz_train.bin").b, 2.6);
  EXPECT_EQ(propensity_model_for("wiki-500k").a, 0.5);
  EXPECT_EQ(propensity_model_for("Wiki10-31K").b, 0.4);
  EXPECT_EQ(propensity_model_for("bibtex").a, 0.55);
  EXPECT_EQ(propensity_model_for("bibtex").b, 1.5);
}

}  // namespace
}  // namespace hetsgd
