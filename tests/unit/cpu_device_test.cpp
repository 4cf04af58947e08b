// The CPU device against hand computations and its own contract (core/device.h): optimiser
// rules, lazy sparse updates, gradient()+apply_update() == train_step(), determinism, top-k.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "kernels/cpu/api.h"
#include "tests/common/random_batch.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

// Random batch over features [0, d) that uses only features < d_used, so rows >= d_used of W0
// are never touched (to observe lazy updates). Row 2 has no labels.
CsrBatch make_batch(index_t d_used, index_t d, index_t labels, index_t rows, std::uint64_t seed) {
  SplitMix64 rng(seed);
  CsrBatch b = test::empty_batch(d, labels);
  for (index_t r = 0; r < rows; ++r) {
    const int nf = 1 + static_cast<int>(rng() % 5);
    test::open_row(b, test::draw_ids(rng, nf, d_used), 0.25f, rng);
    test::close_row(b, r == 2 ? std::vector<col_t>{}
                              : test::draw_ids(rng, 1 + static_cast<int>(rng() % 3), labels));
  }
  return b;
}

ModelConfig small_config(OptimizerKind kind, float momentum = 0.0f, float wd = 0.0f,
                         std::vector<index_t> hidden = {16}) {
  ModelConfig c = test::fixed_model();
  c.num_features = 40;
  c.num_labels = 23;
  c.hidden = std::move(hidden);
  c.optimizer.kind = kind;
  c.optimizer.momentum = momentum;
  c.optimizer.weight_decay = wd;
  c.seed = 3;
  return c;
}

using test::grad_of;
using test::params_of;

// Double-precision forward of a one-hidden-layer model, for loss and ranking references.
std::vector<double> reference_logits(const ModelConfig& c, const std::vector<float>& p,
                                     const CsrBatch& b, index_t r) {
  const ParamLayout lay(c);
  const LayerSlice& l0 = lay.layers()[0];
  const LayerSlice& l1 = lay.layers()[1];
  std::vector<double> h(l0.out);
  for (index_t j = 0; j < l0.out; ++j) h[j] = p[l0.b_offset + j];
  for (index_t q = b.x_indptr[r]; q < b.x_indptr[r + 1]; ++q) {
    for (index_t j = 0; j < l0.out; ++j) {
      h[j] += b.x_values[q] * p[l0.w_offset + b.x_indices[q] * l0.out + j];
    }
  }
  std::vector<double> z(l1.out);
  for (index_t o = 0; o < l1.out; ++o) {
    double s = p[l1.b_offset + o];
    for (index_t j = 0; j < l0.out; ++j) s += std::max(h[j], 0.0) * p[l1.w_offset + o * l1.in + j];
    z[o] = s;
  }
  return z;
}

TEST(CpuDevice, InitialParamsFollowInitParams) {
  const ModelConfig c = small_config(OptimizerKind::kSgd);
  auto dev = cpu::make_device(0, c, {1, false});
  std::vector<float> expect(dev->layout().total());
  init_params(dev->layout(), c.seed, expect.data());
  EXPECT_EQ(params_of(*dev), expect);
  EXPECT_EQ(dev->id(), DeviceId::cpu(0));
  EXPECT_NE(dev->name().find("1 threads"), std::string::npos);
}

TEST(CpuDevice, ForwardLossAndTopkMatchDoubleReference) {
  for (Loss loss : {Loss::kSoftmax, Loss::kBce}) {
    ModelConfig c = small_config(OptimizerKind::kSgd);
    c.loss = loss;
    auto dev = cpu::make_device(0, c, {2, false});
    const CsrBatch b = make_batch(40, 40, 23, 37, 9);
    const int k = 5;
    std::vector<col_t> top(b.rows() * k);
    std::vector<float> sc(b.rows() * k);
    const float got = dev->predict_topk(b, k, top.data(), sc.data());
    const std::vector<float> p = params_of(*dev);
    double total = 0;
    for (index_t r = 0; r < b.rows(); ++r) {
      const std::vector<double> z = reference_logits(c, p, b, r);
      std::vector<col_t> order(z.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](col_t a, col_t e) { return z[a] > z[e]; });
      for (int i = 0; i < k; ++i) {
        EXPECT_EQ(top[r * k + i], order[i]) << "row " << r << " rank " << i;
        EXPECT_NEAR(sc[r * k + i], z[order[i]], 1e-5);
      }
      const index_t nl = b.y_indptr[r + 1] - b.y_indptr[r];
      if (loss == Loss::kSoftmax) {
        if (nl == 0) continue;  // rows without labels add 0 but count in the mean
        double m = *std::max_element(z.begin(), z.end()), s = 0, ys = 0;
        for (double v : z) s += std::exp(v - m);
        for (index_t q = b.y_indptr[r]; q < b.y_indptr[r + 1]; ++q) ys += z[b.y_indices[q]];
        total += m + std::log(s) - ys / nl;
      } else {
        std::vector<double> y(z.size(), 0.0);
        for (index_t q = b.y_indptr[r]; q < b.y_indptr[r + 1]; ++q) y[b.y_indices[q]] = 1.0;
        for (size_t j = 0; j < z.size(); ++j) {
          total += std::max(z[j], 0.0) - z[j] * y[j] + std::log1p(std::exp(-std::fabs(z[j])));
        }
      }
    }
    const double denom = loss == Loss::kSoftmax ? b.rows() : b.rows() * 23.0;
    EXPECT_NEAR(got, total / denom, 1e-5) << to_string(loss);
  }
}

TEST(CpuDevice, SgdStepIsParamsMinusLrTimesGradient) {
  const ModelConfig c = small_config(OptimizerKind::kSgd);
  auto dev = cpu::make_device(0, c, {2, false});
  const CsrBatch b = make_batch(40, 40, 23, 20, 1);
  const std::vector<float> p0 = params_of(*dev);
  dev->gradient(b, 1.0f);
  const std::vector<float> g = grad_of(*dev);
  dev->train_step(b, 0.5f);
  const std::vector<float> p1 = params_of(*dev);
  for (size_t k = 0; k < p0.size(); ++k) EXPECT_FLOAT_EQ(p1[k], p0[k] - 0.5f * g[k]) << k;
}

TEST(CpuDevice, MomentumAndAdamTwoStepsByHand) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    const ModelConfig c = small_config(kind, kind == OptimizerKind::kSgd ? 0.9f : 0.0f);
    auto dev = cpu::make_device(0, c, {1, false});
    const CsrBatch b = make_batch(40, 40, 23, 10, 4);
    const std::vector<float> p0 = params_of(*dev);
    std::vector<double> w(p0.begin(), p0.end());
    std::vector<double> m(w.size(), 0.0), v(w.size(), 0.0);
    for (int t = 1; t <= 2; ++t) {
      dev->gradient(b, 1.0f);  // the gradient train_step will use at the same params
      const std::vector<float> g = grad_of(*dev);
      dev->train_step(b, 0.1f);
      for (size_t k = 0; k < w.size(); ++k) {
        if (kind == OptimizerKind::kSgd) {
          m[k] = 0.9 * m[k] + g[k];
          w[k] -= 0.1 * m[k];
        } else {
          // Lazy Adam: untouched W0 rows (zero gradient here) are skipped entirely.
          const bool w0 = static_cast<index_t>(k) < dev->layout().sparse_weights();
          bool row_touched = true;
          if (w0) {
            const index_t f = static_cast<index_t>(k) / 16;
            row_touched = false;
            for (col_t x : b.x_indices) row_touched = row_touched || x == f;
          }
          if (!row_touched) continue;
          m[k] = 0.9 * m[k] + 0.1 * g[k];
          v[k] = 0.999 * v[k] + 0.001 * double(g[k]) * g[k];
          const double mh = m[k] / (1 - std::pow(0.9, t)), vh = v[k] / (1 - std::pow(0.999, t));
          w[k] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
        }
      }
      const std::vector<float> got = params_of(*dev);
      for (size_t k = 0; k < w.size(); ++k) {
        ASSERT_NEAR(got[k], w[k], 2e-5) << to_string(kind) << " step " << t << " param " << k;
      }
    }
  }
}

TEST(CpuDevice, LazyUpdateTouchesOnlyBatchRows) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    // Momentum and weight decay would move every row under a dense update.
    const ModelConfig c = small_config(kind, 0.9f, 0.01f);
    auto dev = cpu::make_device(0, c, {2, false});
    const std::vector<float> p0 = params_of(*dev);
    for (int s = 0; s < 3; ++s) dev->train_step(make_batch(25, 40, 23, 16, 10 + s), 0.05f);
    // Gradient path, and an all-reduce style write_gradient() with one non-zero row (26).
    dev->gradient(make_batch(25, 40, 23, 16, 20), 1.0f);
    dev->apply_update(0.05f);
    std::vector<float> g = grad_of(*dev);
    std::fill(g.begin(), g.begin() + dev->layout().sparse_weights(), 0.0f);
    g[26 * 16 + 3] = 0.5f;
    dev->write_gradient(g.data());
    dev->apply_update(0.05f);
    const std::vector<float> p1 = params_of(*dev);
    for (index_t f = 25; f < 40; ++f) {
      for (index_t j = 0; j < 16; ++j) {
        const index_t k = f * 16 + j;
        if (f == 26) {
          EXPECT_NE(p1[k], p0[k]) << "row 26 had a gradient; " << to_string(kind);
        } else {
          EXPECT_EQ(p1[k], p0[k]) << "untouched row " << f << " moved; " << to_string(kind);
        }
      }
    }
    index_t moved = 0;
    for (index_t k = 0; k < 25 * 16; ++k) moved += p1[k] != p0[k];
    EXPECT_GT(moved, 25 * 8) << "batch rows should have been updated";
  }
}

TEST(CpuDevice, GradientThenApplyEqualsTrainStep) {
  struct Opt {
    OptimizerKind kind;
    float momentum;
    float wd;
  };
  for (Opt o : {Opt{OptimizerKind::kSgd, 0.0f, 0.0f}, Opt{OptimizerKind::kSgd, 0.9f, 1e-3f},
                Opt{OptimizerKind::kAdam, 0.0f, 1e-3f}}) {
    const ModelConfig c = small_config(o.kind, o.momentum, o.wd, {16, 12});
    auto a = cpu::make_device(0, c, {2, false});
    auto b = cpu::make_device(1, c, {3, false});
    for (int s = 0; s < 4; ++s) {
      const CsrBatch batch = make_batch(40, 40, 23, 24, 100 + s);
      const float la = a->train_step(batch, 0.02f);
      const float lb = b->gradient(batch, 1.0f);
      b->apply_update(0.02f);
      EXPECT_EQ(la, lb);
    }
    EXPECT_EQ(params_of(*a), params_of(*b)) << to_string(o.kind) << " momentum " << o.momentum;
  }
}

TEST(CpuDevice, GradientIsDenseAndClearsStaleRows) {
  const ModelConfig c = small_config(OptimizerKind::kSgd);
  auto dev = cpu::make_device(0, c, {1, false});
  CsrBatch b1 = make_batch(10, 40, 23, 8, 1);
  dev->gradient(b1, 1.0f);
  // A batch on disjoint features: rows of the first batch must read as zero now.
  CsrBatch b2 = make_batch(10, 40, 23, 8, 2);
  for (col_t& f : b2.x_indices) f += 20;
  dev->gradient(b2, 2.0f);
  const std::vector<float> g2 = grad_of(*dev);
  for (index_t k = 0; k < 20 * 16; ++k) ASSERT_EQ(g2[k], 0.0f) << k;
  // Scale is linear.
  dev->gradient(b2, 1.0f);
  const std::vector<float> g1 = grad_of(*dev);
  for (size_t k = 0; k < g1.size(); ++k) ASSERT_FLOAT_EQ(g2[k], 2.0f * g1[k]);
  // After write_gradient of a full buffer the next gradient() still clears everything.
  std::vector<float> ones(g1.size(), 1.0f);
  dev->write_gradient(ones.data());
  dev->gradient(b2, 1.0f);
  EXPECT_EQ(grad_of(*dev), g1);
}

TEST(CpuDevice, ReadWriteParamsRoundTripAndReset) {
  const ModelConfig c = small_config(OptimizerKind::kAdam);
  auto a = cpu::make_device(0, c, {1, false});
  auto b = cpu::make_device(1, c, {1, false});
  const CsrBatch batch = make_batch(40, 40, 23, 16, 5);
  a->train_step(batch, 0.01f);
  const std::vector<float> pa = params_of(*a);
  b->write_params(pa.data());
  EXPECT_EQ(params_of(*b), pa);
  // Same params, fresh optimiser state on both: identical next step.
  a->reset_optimizer();
  EXPECT_EQ(a->train_step(batch, 0.01f), b->train_step(batch, 0.01f));
  EXPECT_EQ(params_of(*a), params_of(*b));
}

// After training, the gradient and the optimiser state are given back as zeros: scoring is
// unchanged, and a further step is a fresh optimiser's first on the same parameters.
TEST(CpuDevice, ReleasingTheTrainingStateKeepsTheModelAndZeroesTheRest) {
  const ModelConfig c = small_config(OptimizerKind::kAdam);
  auto a = cpu::make_device(0, c, {1, false});
  auto b = cpu::make_device(1, c, {1, false});
  const CsrBatch batch = make_batch(40, 40, 23, 16, 5);
  a->train_step(batch, 0.01f);
  a->gradient(batch, 1.0f);
  const std::vector<float> p = params_of(*a);
  const int k = 3;
  std::vector<col_t> before(16 * k), after(16 * k);
  std::vector<float> sb(16 * k), sa(16 * k);
  a->predict_topk(batch, k, before.data(), sb.data());
  a->release_training_state();
  EXPECT_EQ(params_of(*a), p);
  a->predict_topk(batch, k, after.data(), sa.data());
  EXPECT_EQ(after, before);
  EXPECT_EQ(sa, sb);
  const std::vector<float> g = grad_of(*a);
  EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](float x) { return x == 0.0f; }));
  const OptimizerState st = a->read_optimizer();
  EXPECT_EQ(st.steps, 0);
  for (const std::vector<float>* m : {&st.first, &st.second})
    EXPECT_TRUE(std::all_of(m->begin(), m->end(), [](float x) { return x == 0.0f; }));
  b->write_params(p.data());
  a->train_step(batch, 0.01f);
  b->train_step(batch, 0.01f);
  EXPECT_EQ(params_of(*a), params_of(*b));
}

TEST(CpuDevice, SameSeedSameResultsAnyThreadCount) {
  ModelConfig c = small_config(OptimizerKind::kAdam, 0.0f, 0.0f, {64, 32});
  c.num_features = 300;
  c.num_labels = 700;  // several column blocks in the output layer
  auto a = cpu::make_device(0, c, {1, false});
  auto b = cpu::make_device(1, c, {4, false});
  for (int s = 0; s < 3; ++s) {
    const CsrBatch batch = make_batch(300, 300, 700, 100, 50 + s);
    EXPECT_EQ(a->train_step(batch, 0.01f), b->train_step(batch, 0.01f)) << "step " << s;
  }
  EXPECT_EQ(params_of(*a), params_of(*b));
  c.seed = 4;
  auto other = cpu::make_device(2, c, {1, false});
  EXPECT_NE(params_of(*other),
            params_of(*cpu::make_device(3, small_config(OptimizerKind::kSgd), {1, false})));
}

TEST(CpuDevice, RowsWithoutLabelsCountInTheMean) {
  const ModelConfig c = small_config(OptimizerKind::kSgd);
  auto dev = cpu::make_device(0, c, {1, false});
  CsrBatch one = make_batch(40, 40, 23, 1, 3);
  CsrBatch two = one;
  two.x_indices.push_back(5);  // a second row with a feature and no label
  two.x_values.push_back(1.0f);
  two.x_indptr.push_back(static_cast<index_t>(two.x_indices.size()));
  two.y_indptr.push_back(two.y_indptr.back());
  col_t t[2];
  float s[2];
  const float l1 = dev->predict_topk(one, 1, t, s);
  const float l2 = dev->predict_topk(two, 1, t, s);
  EXPECT_GT(l1, 0.0f);
  EXPECT_FLOAT_EQ(l2, l1 / 2.0f);
}

TEST(CpuDevice, RejectsOutOfRangeIdsAndStaysUsable) {
  const ModelConfig c = small_config(OptimizerKind::kSgd);
  auto dev = cpu::make_device(0, c, {2, false});
  CsrBatch bad = make_batch(40, 40, 23, 8, 1);
  bad.x_indices[3] = 40;
  EXPECT_THROW(dev->train_step(bad, 0.1f), InvalidArgument);
  CsrBatch bad_label = make_batch(40, 40, 23, 8, 1);
  bad_label.y_indices[0] = 23;
  EXPECT_THROW(dev->gradient(bad_label, 1.0f), InvalidArgument);
  const CsrBatch good = make_batch(40, 40, 23, 8, 1);
  auto ref = cpu::make_device(1, c, {1, false});
  EXPECT_EQ(dev->train_step(good, 0.1f), ref->train_step(good, 0.1f));
  col_t t;
  float s;
  EXPECT_THROW(dev->predict_topk(good, 0, &t, &s), InvalidArgument);
}

TEST(CpuDevice, TrainingReducesLossOnAFixedBatch) {
  const ModelConfig c = small_config(OptimizerKind::kAdam);
  auto dev = cpu::make_device(0, c, {2, false});
  const CsrBatch b = make_batch(40, 40, 23, 32, 8);
  const float first = dev->train_step(b, 0.01f);
  float last = first;
  for (int i = 0; i < 100; ++i) last = dev->train_step(b, 0.01f);
  EXPECT_LT(last, 0.5f * first);
}

}  // namespace
}  // namespace hetsgd
