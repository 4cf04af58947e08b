// Per-element math of core/math/: the formulas both backends share, checked against
// double-precision references and hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/math/optimizer_update.h"
#include "core/math/sigmoid_bce.h"
#include "core/math/softmax_ce.h"
#include "core/math/topk.h"
#include "core/random.h"

namespace hetsgd::math {
namespace {

TEST(MathSoftmaxCe, MatchesDoubleReference) {
  const std::vector<float> z = {1.5f, -0.25f, 3.0f, 0.0f, 2.0f};
  const std::vector<col_t> y = {2, 4};
  std::vector<float> g(z.size());
  const float loss = softmax_ce_row(z.data(), 5, y.data(), 2, 0.5f, g.data());
  double mx = 3.0, se = 0;
  for (float v : z) se += std::exp(v - mx);
  const double lse = mx + std::log(se);
  EXPECT_NEAR(loss, lse - (3.0 + 2.0) / 2.0, 1e-6);
  for (int j = 0; j < 5; ++j) {
    const double t = (j == 2 || j == 4) ? 0.5 : 0.0;
    EXPECT_NEAR(g[j], 0.5 * (std::exp(z[j] - lse) - t), 1e-6) << j;
  }
  // The gradient of softmax - normalised target sums to zero.
  EXPECT_NEAR(std::accumulate(g.begin(), g.end(), 0.0), 0.0, 1e-6);
}

TEST(MathSoftmaxCe, StableForHugeLogitsAndAliasing) {
  std::vector<float> z = {1000.0f, 999.0f, -1000.0f};
  const col_t y = 0;
  const float loss = softmax_ce_row(z.data(), 3, &y, 1, 1.0f, z.data());  // grad over z
  EXPECT_NEAR(loss, std::log(1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_TRUE(std::isfinite(z[0]));
  EXPECT_NEAR(z[0], 1.0 / (1.0 + std::exp(-1.0)) - 1.0, 1e-5);
  EXPECT_NEAR(z[2], 0.0, 1e-6);
}

TEST(MathSoftmaxCe, RowWithoutLabelsIsZero) {
  std::vector<float> z = {1.0f, 2.0f};
  std::vector<float> g = {7.0f, 7.0f};
  EXPECT_EQ(softmax_ce_row(z.data(), 2, nullptr, 0, 1.0f, g.data()), 0.0f);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_EQ(g[1], 0.0f);
}

TEST(MathSoftmaxCe, PiecesComposeToRow) {
  const std::vector<float> z = {0.3f, -1.0f, 2.5f, 0.7f};
  const col_t y = 1;
  std::vector<float> g(4);
  const float loss = softmax_ce_row(z.data(), 4, &y, 1, 1.0f, g.data());
  const float m = row_max(z.data(), 4);
  const float s = row_sum_exp(z.data(), 4, m);
  EXPECT_FLOAT_EQ(loss, softmax_ce_loss(m, s, z.data(), &y, 1));
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(g[j], softmax_ce_grad(z[j], m, 1.0f / s, j == 1 ? 1.0f : 0.0f), 1e-7);
  }
}

TEST(MathBce, MatchesNaiveFormAndIsStable) {
  for (float x : {-5.0f, -0.5f, 0.0f, 0.25f, 4.0f}) {
    for (float y : {0.0f, 1.0f}) {
      const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
      const double ref = -(y * std::log(s) + (1 - y) * std::log(1 - s));
      EXPECT_NEAR(bce_loss(x, y), ref, 1e-6) << x << ' ' << y;
      EXPECT_NEAR(bce_grad(x, y), s - y, 1e-7);
    }
  }
  EXPECT_NEAR(bce_loss(-200.0f, 1.0f), 200.0f, 1e-3);
  EXPECT_NEAR(bce_loss(200.0f, 0.0f), 200.0f, 1e-3);
  EXPECT_EQ(bce_loss(200.0f, 1.0f), 0.0f);
  EXPECT_NEAR(sigmoid(-100.0f), 0.0f, 1e-30);
  EXPECT_EQ(sigmoid(100.0f), 1.0f);
}

TEST(MathTopk, MatchesFullSortWithTies) {
  SplitMix64 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 200);
    const int k = 1 + static_cast<int>(rng() % 8);
    std::vector<float> z(n);
    // Coarse values so ties are common.
    for (float& v : z) v = static_cast<float>(rng() % 20) * 0.5f;
    std::vector<col_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](col_t a, col_t b) { return z[a] > z[b]; });
    std::vector<float> s(k);
    std::vector<col_t> id(k);
    topk_row(z.data(), n, k, s.data(), id.data());
    for (int r = 0; r < k; ++r) {
      if (r < n) {
        EXPECT_EQ(id[r], order[r]) << "trial " << trial << " rank " << r;
        EXPECT_EQ(s[r], z[order[r]]);
      } else {
        EXPECT_EQ(id[r], -1);
      }
    }
  }
}

TEST(MathTopk, IgnoresNan) {
  const std::vector<float> z = {NAN, 1.0f, NAN, 0.5f};
  float s[2];
  col_t id[2];
  topk_row(z.data(), 4, 2, s, id);
  EXPECT_EQ(id[0], 1);
  EXPECT_EQ(id[1], 3);
}

TEST(MathOptimizer, SgdAndMomentumByHand) {
  float w = 1.0f;
  sgd_update(w, 0.5f, 0.1f, 0.0f);
  EXPECT_FLOAT_EQ(w, 0.95f);
  w = 2.0f;
  sgd_update(w, 0.5f, 0.1f, 0.25f);  // g' = 0.5 + 0.5 = 1
  EXPECT_FLOAT_EQ(w, 1.9f);
  w = 1.0f;
  float v = 0.0f;
  momentum_update(w, v, 1.0f, 0.1f, 0.9f, 0.0f);  // v = 1, w = 0.9
  EXPECT_FLOAT_EQ(v, 1.0f);
  EXPECT_FLOAT_EQ(w, 0.9f);
  momentum_update(w, v, 2.0f, 0.1f, 0.9f, 0.0f);  // v = 2.9, w = 0.61
  EXPECT_FLOAT_EQ(v, 2.9f);
  EXPECT_NEAR(w, 0.61f, 1e-6);
}

TEST(MathOptimizer, AdamByHand) {
  // Step 1: m = 0.1 g, v = 0.001 g^2, mhat = g, vhat = g^2: w -= lr * g / (|g| + eps).
  float w = 1.0f, m = 0.0f, v = 0.0f;
  adam_update(w, m, v, 0.5f, adam_step(0.01f, 0.9f, 0.999f, 1), 0.9f, 0.999f, 1e-8f, 0.0f);
  EXPECT_NEAR(w, 0.99f, 1e-6);
  EXPECT_NEAR(m, 0.05f, 1e-7);
  EXPECT_NEAR(v, 0.00025f, 1e-8);
  // Step 2 with g = -1: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001 = 0.00124975,
  // mhat = -0.055/0.19, vhat = 0.00124975/0.001999.
  adam_update(w, m, v, -1.0f, adam_step(0.01f, 0.9f, 0.999f, 2), 0.9f, 0.999f, 1e-8f, 0.0f);
  const double mhat = -0.055 / 0.19, vhat = 0.00124975 / (1 - 0.999 * 0.999);
  EXPECT_NEAR(w, 0.99 - 0.01 * mhat / (std::sqrt(vhat) + 1e-8), 1e-6);
}

}  // namespace
}  // namespace hetsgd::math
