// The run-time dispatched SIMD kernels of the CPU backend against the scalar core/math rules,
// for every variant this CPU supports (tails of every length, aliasing, ties, NaN).
#include "kernels/cpu/vec_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/math/optimizer_update.h"
#include "core/math/softmax_ce.h"
#include "core/math/topk.h"

namespace hetsgd::cpu {
namespace {

/// Runs the test body once per supported ISA and restores the default afterwards.
class CpuVecOps : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    chosen_ = vec::use_isa(GetParam().c_str());
    if (chosen_ != GetParam()) GTEST_SKIP() << GetParam() << " not supported by this CPU";
  }
  void TearDown() override { vec::use_isa(nullptr); }
  std::string chosen_;
};

std::vector<float> random_logits(index_t n, unsigned seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> z(static_cast<size_t>(n));
  for (float& x : z) x = dist(rng);
  return z;
}

TEST_P(CpuVecOps, SoftmaxMatchesScalarForEveryTailLength) {
  for (index_t n = 1; n <= 70; ++n) {
    for (float spread : {0.5f, 8.0f, 60.0f}) {
      const std::vector<float> z = random_logits(n, static_cast<unsigned>(n * 7 + spread), spread);
      const std::vector<col_t> labels{0, static_cast<col_t>(n / 2),
                                      0};  // duplicate id counts twice
      std::vector<float> ref(z.size()), got(z.size());
      const float lr = math::softmax_ce_row(z.data(), n, labels.data(), 3, 0.25f, ref.data());
      const float lg = vec::softmax_ce_row(z.data(), n, labels.data(), 3, 0.25f, got.data());
      EXPECT_NEAR(lg, lr, 2e-6f * std::max(1.0f, std::fabs(lr))) << "n " << n;
      for (index_t j = 0; j < n; ++j) {
        ASSERT_NEAR(got[j], ref[j], 1e-6f + 2e-6f * std::fabs(ref[j])) << "n " << n << " j " << j;
      }
      // Loss only, no gradient: same loss.
      EXPECT_FLOAT_EQ(vec::softmax_ce_row(z.data(), n, labels.data(), 3, 1.0f, nullptr), lg);
    }
  }
}

TEST_P(CpuVecOps, ExpShiftMatchesExpfForEveryTailLengthAndMayAlias) {
  for (index_t n = 1; n <= 40; ++n) {
    std::vector<float> z = random_logits(n, static_cast<unsigned>(n * 3 + 1), 6.0f);
    const float shift = 2.5f, scale = 0.125f;
    double ref_sum = 0.0;
    std::vector<float> ref(z.size());
    for (index_t j = 0; j < n; ++j) {
      ref[j] = scale * std::exp(z[j] - shift);
      ref_sum += std::exp(static_cast<double>(z[j]) - shift);
    }
    EXPECT_NEAR(vec::exp_shift(z.data(), n, shift, scale, nullptr), ref_sum, 2e-6 * ref_sum);
    const float got_sum = vec::exp_shift(z.data(), n, shift, scale, z.data());
    EXPECT_NEAR(got_sum, ref_sum, 2e-6 * ref_sum) << "n " << n;
    for (index_t j = 0; j < n; ++j) {
      ASSERT_NEAR(z[j], ref[j], 1e-7f + 3e-6f * std::fabs(ref[j])) << "n " << n << " j " << j;
    }
  }
}

TEST_P(CpuVecOps, SoftmaxGradientMayAliasLogitsAndSumsToZero) {
  const index_t n = 983;
  std::vector<float> z = random_logits(n, 3, 4.0f);
  const std::vector<col_t> labels{5, 900, 982};
  std::vector<float> ref(z.size());
  const float lr = math::softmax_ce_row(z.data(), n, labels.data(), 3, 1.0f, ref.data());
  const float lg = vec::softmax_ce_row(z.data(), n, labels.data(), 3, 1.0f, z.data());
  EXPECT_NEAR(lg, lr, 1e-5f);
  double sum = 0.0;
  for (index_t j = 0; j < n; ++j) {
    EXPECT_NEAR(z[j], ref[j], 1e-7f + 2e-6f * std::fabs(ref[j])) << j;
    sum += z[j];
  }
  EXPECT_NEAR(sum, 0.0, 1e-5);  // softmax sums to 1, the target too
}

TEST_P(CpuVecOps, SoftmaxEmptyRowIsZeroAndExtremeLogitsStayFinite) {
  std::vector<float> z{1.0f, 2.0f, 3.0f};
  EXPECT_EQ(vec::softmax_ce_row(z.data(), 3, nullptr, 0, 1.0f, z.data()), 0.0f);
  for (float v : z) EXPECT_EQ(v, 0.0f);
  // Logits 200 apart: exp underflows for all but the max; loss = 200 for the low label.
  std::vector<float> w(37, -100.0f);
  w[20] = 100.0f;
  const col_t low = 3;
  const float loss = vec::softmax_ce_row(w.data(), 37, &low, 1, 1.0f, w.data());
  EXPECT_NEAR(loss, 200.0f, 1e-3f);
  EXPECT_NEAR(w[20], 1.0f, 1e-6f);
  EXPECT_NEAR(w[3], -1.0f, 1e-6f);
  // A NaN logit makes the loss NaN, as in the scalar rule.
  std::vector<float> q(33, 0.5f);
  q[17] = NAN;
  const col_t l0 = 0;
  EXPECT_TRUE(std::isnan(vec::softmax_ce_row(q.data(), 33, &l0, 1, 1.0f, nullptr)));
}

TEST_P(CpuVecOps, AdamIsBitIdenticalToScalarRule) {
  const index_t n = 77;  // a vector body and a scalar tail
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(n), m(n), v(n), g(n);
  for (index_t i = 0; i < n; ++i) {
    w[i] = dist(rng);
    m[i] = 0.1f * dist(rng);
    v[i] = std::fabs(0.01f * dist(rng));
    g[i] = dist(rng);
  }
  std::vector<float> w2 = w, m2 = m, v2 = v;
  for (long long t = 1; t <= 5; ++t) {
    const math::AdamStep s = math::adam_step(1e-3f, 0.9f, 0.999f, t);
    vec::adam_span(w.data(), m.data(), v.data(), g.data(), n, s, 0.9f, 0.999f, 1e-8f, 1e-4f);
    for (index_t i = 0; i < n; ++i) {
      math::adam_update(w2[i], m2[i], v2[i], g[i], s, 0.9f, 0.999f, 1e-8f, 1e-4f);
    }
  }
  for (index_t i = 0; i < n; ++i) {
    ASSERT_EQ(w[i], w2[i]) << i;
    ASSERT_EQ(m[i], m2[i]) << i;
    ASSERT_EQ(v[i], v2[i]) << i;
  }
}

TEST_P(CpuVecOps, TopkEqualsScalarWithTiesAndNan) {
  for (index_t n : {3, 16, 17, 100, 983}) {
    std::vector<float> z = random_logits(n, static_cast<unsigned>(n), 1.0f);
    for (index_t j = 0; j < n; j += 7) z[j] = 0.5f;  // many ties
    if (n > 10) z[9] = NAN;
    for (int k : {1, 5, 10}) {
      std::vector<float> sr(k), sg(k);
      std::vector<col_t> ir(k), ig(k);
      math::topk_row(z.data(), n, k, sr.data(), ir.data());
      vec::topk_row(z.data(), n, k, sg.data(), ig.data());
      EXPECT_EQ(ig, ir) << "n " << n << " k " << k;
      EXPECT_EQ(sg, sr) << "n " << n << " k " << k;  // -inf pads compare equal
    }
  }
}

TEST_P(CpuVecOps, GatherSumIsBitIdenticalToScalarLoop) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (index_t width : {1, 15, 16, 33, 64, 100, 128, 200}) {
    const index_t rows = 9;
    std::vector<float> base(static_cast<size_t>(rows * width)), init(static_cast<size_t>(width));
    for (float& x : base) x = dist(rng);
    for (float& x : init) x = dist(rng);
    const std::vector<std::int32_t> idx{3, 0, 8, 3, 5};
    const std::vector<float> vals{1.0f, -0.5f, 2.25f, 0.1f, -3.0f};
    for (bool use_init : {false, true}) {
      for (bool relu : {false, true}) {
        std::vector<float> ref(static_cast<size_t>(width));
        for (index_t j = 0; j < width; ++j) ref[j] = use_init ? init[j] : 0.0f;
        for (size_t i = 0; i < idx.size(); ++i) {
          for (index_t j = 0; j < width; ++j) {
            const float prod = vals[i] * base[idx[i] * width + j];  // rounded, then added
            ref[j] = ref[j] + prod;
          }
        }
        if (relu) {
          for (float& x : ref) x = x > 0.0f ? x : 0.0f;
        }
        std::vector<float> got(static_cast<size_t>(width), 42.0f);
        vec::gather_sum(base.data(), width, idx.data(), vals.data(),
                        static_cast<index_t>(idx.size()), use_init ? init.data() : nullptr, relu,
                        got.data());
        ASSERT_EQ(got, ref) << "width " << width << " init " << use_init << " relu " << relu;
      }
    }
    std::vector<float> none(static_cast<size_t>(width), 42.0f);
    vec::gather_sum(base.data(), width, idx.data(), vals.data(), 0, nullptr, false, none.data());
    EXPECT_EQ(none, std::vector<float>(static_cast<size_t>(width), 0.0f));
  }
}

TEST_P(CpuVecOps, ReluAndMask) {
  std::vector<float> x{-1.0f, 0.0f, 2.0f, -0.0f, 3.0f, -5.0f, 1.0f, -2.0f, 4.0f, 7.0f, -1.0f};
  std::vector<float> dx(x.size(), 1.5f);
  vec::relu_mask(dx.data(), x.data(), static_cast<index_t>(x.size()));
  vec::relu(x.data(), static_cast<index_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_GE(x[i], 0.0f);
    EXPECT_EQ(dx[i], x[i] > 0.0f ? 1.5f : 0.0f) << i;
  }
}

TEST_P(CpuVecOps, AddToIsElementwiseForEveryTailLength) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (index_t n : {0, 1, 7, 15, 16, 17, 33, 100}) {
    std::vector<float> dst(static_cast<size_t>(n) + 1), src(static_cast<size_t>(n) + 1);
    for (float& v : dst) v = u(rng);
    for (float& v : src) v = u(rng);
    std::vector<float> want = dst;
    for (index_t i = 0; i < n; ++i) want[i] += src[i];  // the element past n stays untouched
    vec::add_to(dst.data(), src.data(), n);
    EXPECT_EQ(dst, want) << "n = " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(CpuIsa, CpuVecOps, ::testing::Values("baseline", "avx2", "avx512"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace hetsgd::cpu
