#include "core/engine/merge_weights.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/error.h"

namespace hetsgd {
namespace {

TEST(EngineMergeWeights, SumToOneForEveryKindIncludingFailedAndIdleDevices) {
  const std::vector<index_t> n = {12, 3, 0, 7};
  const std::vector<index_t> m = {12 * 256, 3 * 64, 0, 7 * 100};
  const std::vector<std::vector<bool>> masks = {
      {true, true, true, true}, {true, false, true, true}, {false, false, true, false}};
  for (MergeWeights kind :
       {MergeWeights::kUpdates, MergeWeights::kSamples, MergeWeights::kUniform}) {
    for (const auto& active : masks) {
      const std::vector<double> w = merge_weights(kind, n, m, active);
      ASSERT_EQ(w.size(), n.size());
      EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0), 1.0, 1e-12) << to_string(kind);
      for (size_t i = 0; i < w.size(); ++i) {
        EXPECT_GE(w[i], 0.0);
        if (!active[i]) {
          EXPECT_EQ(w[i], 0.0) << "failed device " << i << " got weight";
        }
      }
    }
  }
  const std::vector<double> w =
      merge_weights(MergeWeights::kUpdates, n, m, {true, true, true, true});
  EXPECT_DOUBLE_EQ(w[0], 12.0 / 22.0);
  EXPECT_DOUBLE_EQ(w[2], 0.0);
  const std::vector<double> ws =
      merge_weights(MergeWeights::kSamples, n, m, {true, true, true, true});
  EXPECT_DOUBLE_EQ(ws[1], 192.0 / (3072.0 + 192.0 + 700.0));
}

TEST(EngineMergeWeights, NoActiveDeviceIsAnError) {
  EXPECT_THROW(merge_weights(MergeWeights::kUpdates, {1, 2}, {1, 2}, {false, false}),
               InvalidArgument);
  EXPECT_THROW(merge_weights(MergeWeights::kUpdates, {1}, {1, 2}, {true, true}), InvalidArgument);
}

TEST(EngineMergeWeights, PlainAveragingCentreEqualsTheAverageExactly) {
  std::vector<float> z = {0.1f, -3.0f, 1e-7f, 12345.678f};
  std::vector<float> prev = {9.0f, 9.0f, 9.0f, 9.0f};
  const std::vector<float> avg = {0.30000001f, 2.5f, -1e-9f, 0.333333f};
  const std::vector<float> old = z;
  update_centre(z.data(), prev.data(), avg.data(), 4, /*alpha=*/1.0, /*mu=*/0.0);
  EXPECT_EQ(z, avg);
  EXPECT_EQ(prev, old);
}

TEST(EngineMergeWeights, ElasticCentreWithBlockMomentum) {
  std::vector<float> z = {1.0f}, prev = {0.5f};
  const std::vector<float> avg = {3.0f};
  update_centre(z.data(), prev.data(), avg.data(), 1, 0.5, 0.25);
  // Z' = 1 + 0.5 (3 - 1) + 0.25 (1 - 0.5)
  EXPECT_FLOAT_EQ(z[0], 2.125f);
  EXPECT_FLOAT_EQ(prev[0], 1.0f);
  std::vector<float> w = {4.0f};
  pull_towards(w.data(), z.data(), 1, 0.5);
  EXPECT_FLOAT_EQ(w[0], 4.0f + 0.5f * (2.125f - 4.0f));
}

}  // namespace
}  // namespace hetsgd
