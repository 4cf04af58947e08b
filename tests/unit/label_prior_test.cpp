// add_label_prior: exactly g ln(1/p_l) is added to each label's output bias, nothing else moves,
// and bad weights or sizes are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/label_prior.h"
#include "core/param_layout.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

ModelConfig small_config() { return test::mlp(4, 3, {2}); }

TEST(LabelPrior, AddsTheWeightedLogInversePropensityToTheOutputBiasOnly) {
  const ParamLayout layout(small_config());
  std::vector<float> params(static_cast<size_t>(layout.total()));
  for (size_t i = 0; i < params.size(); ++i) params[i] = 0.01f * static_cast<float>(i);
  const std::vector<float> before = params;
  const std::vector<float> inv = {1.0f, std::exp(1.0f), std::exp(2.0f)};
  add_label_prior(layout, inv, 0.5, &params);
  const LayerSlice& out = layout.layers().back();
  for (index_t i = 0; i < layout.total(); ++i) {
    const size_t s = static_cast<size_t>(i);
    const bool is_bias = i >= out.b_offset && i < out.b_offset + out.out;
    const float want =
        is_bias ? before[s] + 0.5f * static_cast<float>(i - out.b_offset) : before[s];
    EXPECT_NEAR(params[s], want, 1e-6f) << "parameter " << i;
  }
}

TEST(LabelPrior, ZeroWeightLeavesTheModelBitForBit) {
  const ParamLayout layout(small_config());
  std::vector<float> params(static_cast<size_t>(layout.total()), 0.25f);
  add_label_prior(layout, {1.0f, 3.0f, 9.0f}, 0.0, &params);
  EXPECT_EQ(params, std::vector<float>(params.size(), 0.25f));
}

TEST(LabelPrior, RefusesBadWeightsSizesAndPropensities) {
  const ParamLayout layout(small_config());
  std::vector<float> params(static_cast<size_t>(layout.total()));
  EXPECT_THROW(add_label_prior(layout, {1, 2, 3}, -0.1, &params), InvalidArgument);
  EXPECT_THROW(add_label_prior(layout, {1, 2, 3}, kMaxTailWeight + 1, &params), InvalidArgument);
  EXPECT_THROW(add_label_prior(layout, {1, 2}, 0.5, &params), InvalidArgument);
  EXPECT_THROW(add_label_prior(layout, {1, 0.5f, 3}, 0.5, &params), InvalidArgument);
  std::vector<float> short_params(3);
  EXPECT_THROW(add_label_prior(layout, {1, 2, 3}, 0.5, &short_params), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
