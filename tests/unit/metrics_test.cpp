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

}  // namespace
}  // namespace hetsgd
