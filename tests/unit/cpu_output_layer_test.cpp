// The CPU output layer without batch x L buffers: chunked scoring against the one-block fast
// path, the by-label kernels, the shortlist against the full softmax, row-sparse shortlisted
// updates, the label index, and a large-L model whose scratch buffers must stay O(batch x chunk).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/emulated_device.h"
#include "core/error.h"
#include "core/random.h"
#include "kernels/cpu/api.h"
#include "kernels/cpu/cpu_device.h"
#include "kernels/cpu/dense.h"
#include "kernels/cpu/label_index.h"
#include "tests/common/random_batch.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

CsrBatch random_batch(index_t d, index_t labels, index_t rows, std::uint64_t seed) {
  SplitMix64 rng(seed);
  CsrBatch b = test::empty_batch(d, labels);
  for (index_t r = 0; r < rows; ++r) {
    test::open_row(b, test::draw_ids(rng, 4, d), 0.5f, rng);
    test::close_row(b,
                    r == 1 ? std::vector<col_t>{} : test::draw_ids(rng, 3, labels));  // row 1: none
  }
  return b;
}

ModelConfig config_of(Loss loss, std::vector<index_t> hidden = {12}) {
  ModelConfig c = test::fixed_model();
  c.num_features = 30;
  c.num_labels = 37;
  c.hidden = std::move(hidden);
  c.loss = loss;
  c.optimizer.kind = OptimizerKind::kSgd;
  c.seed = 5;
  return c;
}

using test::grad_of;
using test::params_of;

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tol * (1.0f + std::fabs(b[i]))) << "entry " << i;
  }
}

// CPU devices of `ca` and `cb` (two threads each) whose losses on `batch` agree within
// `loss_tol` (relative) and whose gradients agree; returned for more comparisons.
std::pair<std::unique_ptr<Device>, std::unique_ptr<Device>> same_gradient(const ModelConfig& ca,
                                                                          const ModelConfig& cb,
                                                                          const CsrBatch& batch,
                                                                          float loss_tol) {
  auto a = cpu::make_device(0, ca, DeviceOptions{2, false});
  auto b = cpu::make_device(0, cb, DeviceOptions{2, false});
  const float la = a->gradient(batch, 1.0f);
  const float lb = b->gradient(batch, 1.0f);
  EXPECT_NEAR(la, lb, loss_tol * (1.0f + std::fabs(la)));
  expect_close(grad_of(*a), grad_of(*b), 1e-5f);
  return {std::move(a), std::move(b)};
}

// A training step at `lr` on `batch` leaves `a` and `b` with the same parameters.
void expect_same_step(Device& a, Device& b, const CsrBatch& batch, float lr) {
  a.train_step(batch, lr);
  b.train_step(batch, lr);
  expect_close(params_of(a), params_of(b), 1e-5f);
}

class ChunkedScoring : public ::testing::TestWithParam<Loss> {};

TEST_P(ChunkedScoring, LossGradientAndTopkEqualTheOneBlockPath) {
  for (const std::vector<index_t>& hidden : {std::vector<index_t>{12}, {12, 9}}) {
    ModelConfig whole = config_of(GetParam(), hidden);
    ModelConfig chunked = whole;
    chunked.shortlist.score_chunk = 5;  // 37 labels: 7 full chunks and a ragged one
    const CsrBatch batch = random_batch(whole.num_features, whole.num_labels, 9, 3);
    auto [a, b] = same_gradient(whole, chunked, batch, 1e-5f);
    const int k = 6;
    std::vector<col_t> ia(batch.rows() * k), ib(batch.rows() * k);
    std::vector<float> sa(batch.rows() * k), sb(batch.rows() * k);
    const float pa = a->predict_topk(batch, k, ia.data(), sa.data());
    const float pb = b->predict_topk(batch, k, ib.data(), sb.data());
    EXPECT_NEAR(pa, pb, 1e-5f * (1.0f + std::fabs(pa)));
    EXPECT_EQ(ia, ib);
    expect_close(sa, sb, 1e-6f);
    // A training step from the chunked gradient equals the one-block one.
    expect_same_step(*a, *b, batch, 0.1f);
  }
}

TEST_P(ChunkedScoring, TopkPadsWhenKExceedsTheLabelCount) {
  ModelConfig c = config_of(GetParam());
  c.shortlist.score_chunk = 8;
  auto d = cpu::make_device(0, c, DeviceOptions{1, false});
  const CsrBatch batch = random_batch(c.num_features, c.num_labels, 3, 9);
  const int k = 40;
  std::vector<col_t> ids(batch.rows() * k);
  std::vector<float> s(batch.rows() * k);
  d->predict_topk(batch, k, ids.data(), s.data());
  for (index_t r = 0; r < batch.rows(); ++r) {
    std::vector<col_t> row(ids.begin() + r * k, ids.begin() + r * k + c.num_labels);
    std::sort(row.begin(), row.end());
    for (index_t j = 0; j < c.num_labels; ++j) EXPECT_EQ(row[j], j);
    for (int i = static_cast<int>(c.num_labels); i < k; ++i) {
      EXPECT_EQ(ids[r * k + i], -1);
      EXPECT_EQ(s[r * k + i], -INFINITY);
    }
  }
}

TEST_P(ChunkedScoring, ShortlistWithEveryLabelACandidateEqualsTheFullLayer) {
  ModelConfig full = config_of(GetParam(), {12, 7});
  ModelConfig sl = full;
  sl.output_layer = OutputLayer::kShortlist;
  sl.shortlist.hard_negatives = 0;
  sl.shortlist.sampled_negatives = static_cast<int>(full.num_labels);  // >= L: every label
  sl.shortlist.optimizer = OptimizerKind::kSgd;
  const CsrBatch batch = random_batch(full.num_features, full.num_labels, 8, 4);
  auto [a, b] = same_gradient(full, sl, batch, 1e-6f);
  // With SGD everywhere the shortlisted step equals the full one too.
  expect_same_step(*a, *b, batch, 0.05f);
}

INSTANTIATE_TEST_SUITE_P(Losses, ChunkedScoring, ::testing::Values(Loss::kSoftmax, Loss::kBce),
                         [](const ::testing::TestParamInfo<Loss>& info) {
                           return std::string(to_string(info.param));
                         });

ModelConfig shortlist_config(OptimizerKind out_opt) {
  ModelConfig c = config_of(Loss::kSoftmax);
  c.num_labels = 500;
  c.output_layer = OutputLayer::kShortlist;
  c.shortlist.hard_negatives = 4;
  c.shortlist.sampled_negatives = 16;
  c.shortlist.rebuild_steps = 2;
  c.shortlist.optimizer = out_opt;
  c.optimizer.kind = OptimizerKind::kAdam;
  return c;
}

// The output layer's kernels with W stored by label ([out x in]) give what the [in x out]
// kernels give on the same weights (up to sgemm's summation order).
TEST(DenseTransposed, MatchesTheKernelsOnTheTransposedWeights) {
  const index_t rows = 9, in = 13, out = 1100;  // out spans several column blocks
  SplitMix64 rng(3);
  auto fill = [&](std::vector<float>* v) {
    for (float& x : *v) x = rng.uniform() - 0.5f;
  };
  std::vector<float> x(static_cast<size_t>(rows * in)), w(static_cast<size_t>(in * out)),
      b(static_cast<size_t>(out)), dy(static_cast<size_t>(rows * out));
  fill(&x);
  fill(&w);
  fill(&b);
  fill(&dy);
  std::vector<float> wt(w.size());
  for (index_t i = 0; i < in; ++i) {
    for (index_t j = 0; j < out; ++j) wt[j * in + i] = w[i * out + j];
  }
  std::vector<float> y(dy.size()), yt(dy.size());
  cpu::dense_forward(x.data(), rows, in, out, w.data(), b.data(), true, y.data());
  cpu::dense_forward_t(x.data(), rows, in, out, wt.data(), b.data(), true, yt.data());
  for (size_t k = 0; k < y.size(); ++k) ASSERT_NEAR(y[k], yt[k], 1e-5f) << k;
  std::vector<float> dw(w.size()), dwt(w.size()), db(b.size()), dbt(b.size());
  cpu::dense_weight_grad(x.data(), dy.data(), rows, in, out, dw.data(), db.data());
  cpu::dense_weight_grad_t(x.data(), dy.data(), rows, in, out, dwt.data(), dbt.data());
  EXPECT_EQ(db, dbt);
  for (index_t i = 0; i < in; ++i) {
    for (index_t j = 0; j < out; ++j) ASSERT_NEAR(dw[i * out + j], dwt[j * in + i], 1e-5f);
  }
  std::vector<float> dx(x.size()), dxt(x.size());
  cpu::dense_input_grad(dy.data(), w.data(), x.data(), rows, in, out, dx.data());
  cpu::dense_input_grad_t(dy.data(), wt.data(), x.data(), rows, in, out, dxt.data());
  for (size_t k = 0; k < dx.size(); ++k) ASSERT_NEAR(dx[k], dxt[k], 1e-4f) << k;
}

TEST(Shortlist, StepTouchesOnlyCandidateRowsAndReportsThem) {
  for (OptimizerKind k : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    const ModelConfig c = shortlist_config(k);
    cpu::CpuDevice d(0, c, 2);
    ASSERT_TRUE(d.shortlisted());
    const CsrBatch batch = random_batch(c.num_features, c.num_labels, 6, 11);
    const std::vector<float> before = params_of(d);
    d.train_step(batch, 0.1f);
    const std::vector<float> after = params_of(d);
    const std::vector<col_t>& touched = d.touched_labels();
    ASSERT_FALSE(touched.empty());
    EXPECT_TRUE(std::is_sorted(touched.begin(), touched.end()));
    EXPECT_LT(static_cast<index_t>(touched.size()), c.num_labels);
    for (col_t y : batch.y_indices) {
      EXPECT_TRUE(std::binary_search(touched.begin(), touched.end(), y)) << "positive " << y;
    }
    const LayerSlice& out = d.layout().layers().back();
    int changed = 0;
    for (index_t j = 0; j < out.out; ++j) {
      const bool listed = std::binary_search(touched.begin(), touched.end(), static_cast<col_t>(j));
      bool row_changed = before[out.b_offset + j] != after[out.b_offset + j];
      for (index_t i = 0; i < out.in; ++i) {
        const index_t q = out.w_offset + j * out.in + i;
        row_changed = row_changed || before[q] != after[q];
      }
      if (!listed) {
        EXPECT_FALSE(row_changed) << "label " << j << " is not a candidate";
      }
      changed += row_changed;
    }
    EXPECT_GT(changed, 0);
  }
}

TEST(Shortlist, GradientThenApplyEqualsTrainStepAcrossIndexRebuilds) {
  const ModelConfig c = shortlist_config(OptimizerKind::kAdam);
  cpu::CpuDevice a(0, c, 2), b(0, c, 1);
  for (int step = 0; step < 7; ++step) {
    const CsrBatch batch = random_batch(c.num_features, c.num_labels, 8, 100 + step);
    const float la = a.train_step(batch, 0.05f);
    const float lb = b.gradient(batch, 1.0f);
    b.apply_update(0.05f);
    EXPECT_EQ(la, lb) << "step " << step;
    EXPECT_EQ(a.touched_labels(), b.touched_labels());
  }
  // Index rebuilds at steps 2, 4, 6 run in the background, yet both replicas (different
  // thread counts, different timing) stay bit-identical.
  EXPECT_EQ(params_of(a), params_of(b));
  ASSERT_NE(a.shortlist(), nullptr);
  EXPECT_TRUE(a.shortlist()->index().ready());
}

// The shortlisted output layer's Adam moments have the parameters' layout (by label). A device
// that takes over another's moments (a resume, a slot moving to another device) must continue
// exactly like the original, and the moments it hands out must sit in the rows of the labels
// they belong to.
TEST(Shortlist, OutputMomentsLeaveAndReturnInTheParametersLayout) {
  ModelConfig c = shortlist_config(OptimizerKind::kAdam);
  c.shortlist.hard_negatives = 0;
  cpu::CpuDevice a(0, c, 2), b(0, c, 1);
  for (int step = 0; step < 3; ++step) {
    a.train_step(random_batch(c.num_features, c.num_labels, 8, 300 + step), 0.05f);
  }
  const OptimizerState st = a.read_optimizer();
  b.write_params(params_of(a).data());
  b.write_optimizer(st);
  EXPECT_EQ(b.read_optimizer().first, st.first);
  EXPECT_EQ(b.read_optimizer().second, st.second);
  // A trained label has some non-zero moment in its row.
  const LayerSlice& out = a.layout().layers().back();
  const std::vector<col_t> touched = a.touched_labels();
  ASSERT_FALSE(touched.empty());
  std::vector<std::uint8_t> seen(static_cast<size_t>(out.out), 0);
  for (col_t j : touched) seen[j] = 1;
  for (index_t j = 0; j < out.out; ++j) {
    double col = 0.0;
    for (index_t i = 0; i < out.in; ++i) col += std::abs(st.second[out.w_offset + j * out.in + i]);
    if (seen[j]) {
      EXPECT_GT(col, 0.0) << "label " << j;
    }
  }
  for (int step = 3; step < 6; ++step) {
    const CsrBatch batch = random_batch(c.num_features, c.num_labels, 8, 300 + step);
    EXPECT_EQ(a.train_step(batch, 0.05f), b.train_step(batch, 0.05f)) << "step " << step;
  }
  EXPECT_EQ(params_of(a), params_of(b));
}

// The default index schedule, one rebuild point a step, builds not spaced beyond their
// install step, and builds cheap against a step (every label a candidate, a sparse graph), so
// that a full one is installed about a hundred steps after its start.
ModelConfig background_builds_config() {
  ModelConfig c = shortlist_config(OptimizerKind::kAdam);
  c.shortlist.wait_for_index = false;
  c.shortlist.rebuild_steps = 1;
  c.shortlist.index_duty = 1.0;
  c.shortlist.sampled_negatives = c.num_labels;
  c.shortlist.ann_m = 4;
  c.shortlist.ann_ef_construction = 8;
  return c;
}

// Trains `d` until its shortlist installs an index after `swaps` installs, at most 5,000
// steps: the install step is fixed in advance and waits for its build. Returns the steps
// taken, counting on from `step`.
int train_until_swapped(cpu::CpuDevice& d, const ModelConfig& c, std::int64_t swaps, int step) {
  for (int n = 0; d.shortlist()->swaps() == swaps && n < 5000; ++n, ++step) {
    d.train_step(random_batch(c.num_features, c.num_labels, 4, 700 + step), 0.01f);
  }
  return step;
}

// Without wait_for_index (the command line's default) builds are scheduled by their
// expected cost: the first, over the labels seen at step 0, starts at step 1 and is installed
// three times its expected duration in steps later (whole rebuild intervals: steps here), waiting
// for a builder slower than that; hard negatives follow from then on.
TEST(Shortlist, BuildsAreInstalledAtTheirScheduledStep) {
  const ModelConfig c = background_builds_config();
  cpu::CpuDevice d(0, c, 1);
  ASSERT_NE(d.shortlist(), nullptr);
  const CsrBatch first = random_batch(c.num_features, c.num_labels, 4, 700);
  std::vector<col_t> seen(first.y_indices.begin(), first.y_indices.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  const CsrBatch second = random_batch(c.num_features, c.num_labels, 4, 701);
  const double expected =
      d.shortlist()->expected_build_steps(static_cast<index_t>(seen.size()), second);
  const auto install = 1 + static_cast<int>(std::ceil(3.0 * expected));
  ASSERT_GT(install, 2);
  d.shortlist()->builder()->delay_builds(std::chrono::milliseconds(50));
  d.train_step(first, 0.01f);
  d.train_step(second, 0.01f);  // step 1 starts the build
  for (int step = 2; step < install; ++step) {
    d.train_step(random_batch(c.num_features, c.num_labels, 4, 700 + step), 0.01f);
  }
  EXPECT_EQ(d.shortlist()->swaps(), 0);
  EXPECT_FALSE(d.shortlist()->index().ready());
  d.train_step(random_batch(c.num_features, c.num_labels, 4, 700 + install), 0.01f);
  EXPECT_EQ(d.shortlist()->swaps(), 1) << "not installed at step " << install;
  EXPECT_TRUE(d.shortlist()->index().ready());
  EXPECT_EQ(d.shortlist()->index().num_labels(), static_cast<index_t>(seen.size()));
}

// The default schedule is a function of the data and the options: a builder slowed to
// 30 ms a build (a loaded machine) gives the same swaps at the same steps and the same
// weights, bit for bit, as one that keeps up.
TEST(Shortlist, ASlowBuilderGivesTheSameModel) {
  ModelConfig c = shortlist_config(OptimizerKind::kAdam);
  c.shortlist.wait_for_index = false;
  c.shortlist.rebuild_steps = 2;
  // Cheap builds against the steps (every label a candidate, a sparse graph): a build is
  // expected to take a few steps, so a hundred steps install several.
  c.shortlist.sampled_negatives = c.num_labels;
  c.shortlist.ann_m = 4;
  c.shortlist.ann_ef_construction = 8;
  auto run = [&](std::chrono::milliseconds delay) {
    cpu::CpuDevice d(0, c, 1);
    d.shortlist()->builder()->delay_builds(delay);
    std::vector<std::int64_t> swaps;
    for (int step = 0; step < 100; ++step) {
      d.train_step(random_batch(c.num_features, c.num_labels, 32, 40 + step), 0.02f);
      swaps.push_back(d.shortlist()->swaps());
    }
    return std::make_pair(swaps, params_of(d));
  };
  const auto fast = run(std::chrono::milliseconds(0));
  const auto slow = run(std::chrono::milliseconds(30));
  ASSERT_GT(fast.first.back(), 2) << "too few indexes installed to compare";
  EXPECT_EQ(fast.first, slow.first);
  EXPECT_TRUE(fast.second == slow.second) << "the weights differ";
}

// The final evaluation's clustered search releases the training's label index and stops a
// build still running, so that their memory does not add to the search's; training that
// goes on builds and swaps in a new one.
TEST(Shortlist, TheClusteredSearchReleasesTheTrainingIndex) {
  const ModelConfig c = background_builds_config();
  cpu::CpuDevice d(0, c, 1);
  int step = train_until_swapped(d, c, 0, 0);
  ASSERT_TRUE(d.shortlist()->index().ready()) << "no index after " << step << " steps";
  // The install step started the next build (duty 1): the search stops it and drops both
  // indexes.
  const CsrBatch rows = random_batch(c.num_features, c.num_labels, 8, 6);
  std::vector<col_t> labels(8 * 5);
  std::vector<float> scores(labels.size());
  ASSERT_TRUE(d.predict_topk_clustered(rows, 5, 16, 4, labels.data(), scores.data()));
  EXPECT_FALSE(d.shortlist()->index().ready());
  EXPECT_EQ(d.shortlist()->builder()->latest(), nullptr);
  // Training goes on: a new build is started and swapped in.
  const std::int64_t swaps = d.shortlist()->swaps();
  step = train_until_swapped(d, c, swaps, step);
  EXPECT_GT(d.shortlist()->swaps(), swaps);
  EXPECT_TRUE(d.shortlist()->index().ready());
}

// The CPU replicas of one process share one index builder (cpu::share_label_index): a
// replica whose rebuild point finds another one's build running takes that build as its own
// and installs it at its own install step; a deterministic run's replicas keep builders of
// their own.
TEST(Shortlist, ReplicasShareOneIndexBuilder) {
  ModelConfig c = background_builds_config();
  std::vector<std::unique_ptr<Device>> devs;
  devs.push_back(cpu::make_device(0, c, DeviceOptions{1}));
  devs.push_back(make_emulated_device(cpu::make_device(1, c, DeviceOptions{1}), 0.5));
  cpu::share_label_index({devs[0].get(), devs[1].get()});
  auto* a = dynamic_cast<cpu::CpuDevice*>(devs[0].get());
  auto* b = dynamic_cast<cpu::CpuDevice*>(&devs[1]->backend());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::shared_ptr<cpu::IndexBuilder>& builder = a->shortlist()->builder();
  ASSERT_EQ(builder, b->shortlist()->builder());
  // A build slower than the steps, without a clock: held until let through, `a`'s first build
  // (started at its step 1) still runs at `b`'s first rebuild point (its step 1), which takes
  // it as its own. Neither replica reaches an install step (a rebuild interval or more after
  // the start) before the build is let through, so nothing waits for a held build.
  builder->allow_builds(0);
  for (int i = 0; i < 2; ++i) {
    a->train_step(random_batch(c.num_features, c.num_labels, 4, 900 + i), 0.01f);
  }
  for (int i = 0; i < 2; ++i) {
    b->train_step(random_batch(c.num_features, c.num_labels, 4, i), 0.01f);
  }
  EXPECT_EQ(builder->builds(), 0);
  EXPECT_EQ(b->shortlist()->swaps(), 0);
  // One build goes through; the next, started at `b`'s install step, stays held.
  builder->allow_builds(1);
  for (int i = 2; i < 1000 && b->shortlist()->swaps() == 0; ++i) {
    b->train_step(random_batch(c.num_features, c.num_labels, 4, i), 0.01f);
  }
  // `b` waited for `a`'s build at its install step and installed it: one build served both.
  EXPECT_EQ(b->shortlist()->swaps(), 1);
  EXPECT_TRUE(b->shortlist()->index().ready());
  EXPECT_EQ(builder->builds(), 1);
  EXPECT_EQ(&b->shortlist()->index(), builder->latest().get());

  c.shortlist.wait_for_index = true;
  cpu::CpuDevice d(0, c, 1), e(1, c, 1);
  cpu::share_label_index({&d, &e});
  EXPECT_NE(d.shortlist()->builder(), e.shortlist()->builder());
}

TEST(Shortlist, HardNegativesAreTheRowsBestScoringLabels) {
  ModelConfig c = shortlist_config(OptimizerKind::kSgd);
  c.shortlist.sampled_negatives = 0;
  c.shortlist.hard_negatives = 5;
  c.shortlist.ann_ef_search = 200;
  cpu::CpuDevice d(0, c, 1);
  const std::vector<float> p = params_of(d);
  const LayerSlice& out = d.layout().layers().back();
  d.shortlist()->build_now(p.data() + out.w_offset, p.data() + out.b_offset);
  const CsrBatch batch = random_batch(c.num_features, c.num_labels, 1, 21);
  d.gradient(batch, 1.0f);
  // Exact logits of row 0 from the parameters (one hidden layer, ReLU).
  const LayerSlice& l0 = d.layout().layers()[0];
  std::vector<double> h(l0.out);
  for (index_t j = 0; j < l0.out; ++j) {
    double s = p[l0.b_offset + j];
    for (index_t q = batch.x_indptr[0]; q < batch.x_indptr[1]; ++q) {
      s += batch.x_values[q] * p[l0.w_offset + batch.x_indices[q] * l0.out + j];
    }
    h[j] = std::max(0.0, s);
  }
  std::vector<std::pair<double, col_t>> z;
  for (index_t j = 0; j < out.out; ++j) {
    double s = p[out.b_offset + j];
    for (index_t i = 0; i < out.in; ++i) s += h[i] * p[out.w_offset + j * out.in + i];
    z.emplace_back(-s, static_cast<col_t>(j));
  }
  std::sort(z.begin(), z.end());
  const std::vector<col_t>& cand = d.touched_labels();
  int found = 0;
  for (int i = 0; i < 5; ++i) found += std::binary_search(cand.begin(), cand.end(), z[i].second);
  EXPECT_GE(found, 4) << "the index missed most of the row's top-5 labels";
}

// The first index covers only the labels seen as positives before its build started (a
// cheap index early in the first epoch); the next build covers every label.
TEST(Shortlist, TheFirstIndexCoversTheLabelsSeenSoFarThenAllLabels) {
  ModelConfig c = shortlist_config(OptimizerKind::kAdam);
  c.shortlist.wait_for_index = true;  // step s uses the build started at the previous point
  c.shortlist.rebuild_steps = 1;
  cpu::CpuDevice d(0, c, 1);
  const CsrBatch first = random_batch(c.num_features, c.num_labels, 4, 31);
  std::vector<col_t> seen(first.y_indices.begin(), first.y_indices.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  ASSERT_LT(static_cast<index_t>(seen.size()) * 2, c.num_labels);
  d.train_step(first, 0.01f);  // step 0: no rebuild point
  d.train_step(random_batch(c.num_features, c.num_labels, 4, 32), 0.01f);  // starts the first
  d.train_step(random_batch(c.num_features, c.num_labels, 4, 33), 0.01f);  // swaps it in
  const cpu::LabelIndex& index = d.shortlist()->index();
  ASSERT_TRUE(index.ready());
  EXPECT_EQ(index.num_labels(), static_cast<index_t>(seen.size()));
  std::vector<col_t> ids;
  std::vector<std::uint8_t> scratch;
  SplitMix64 rng(5);
  std::vector<float> h(static_cast<size_t>(index.hidden()));
  for (float& x : h) x = rng.uniform();
  index.search(h.data(), 4, &ids, &scratch);
  EXPECT_FALSE(ids.empty());
  for (col_t id : ids) {
    EXPECT_TRUE(std::binary_search(seen.begin(), seen.end(), id)) << id << " was never seen";
  }
  d.train_step(random_batch(c.num_features, c.num_labels, 4, 34), 0.01f);
  EXPECT_EQ(d.shortlist()->index().num_labels(), c.num_labels);
}

TEST(LabelIndex, RecallAgainstExactInnerProductSearch) {
  const index_t n = 3000, h = 16;
  SplitMix64 rng(3);
  std::vector<float> v(n * (h + 1));
  for (float& x : v) x = rng.uniform() - 0.5f;
  cpu::LabelIndex index;
  index.build(v.data(), n, h, cpu::LabelIndexParams{12, 60, 80});
  ASSERT_TRUE(index.ready());
  std::vector<col_t> ids;
  std::vector<std::uint8_t> scratch;
  int hits = 0, total = 0;
  for (int q = 0; q < 50; ++q) {
    std::vector<float> query(h);
    for (float& x : query) x = rng.uniform() - 0.5f;
    std::vector<std::pair<float, col_t>> exact;
    for (index_t j = 0; j < n; ++j) {
      float s = v[j * (h + 1) + h];
      for (index_t i = 0; i < h; ++i) s += query[i] * v[j * (h + 1) + i];
      exact.emplace_back(-s, static_cast<col_t>(j));
    }
    std::partial_sort(exact.begin(), exact.begin() + 10, exact.end());
    index.search(query.data(), 10, &ids, &scratch);
    ASSERT_EQ(ids.size(), 10u);
    for (int i = 0; i < 10; ++i) {
      hits += std::find(ids.begin(), ids.end(), exact[i].second) != ids.end();
      ++total;
    }
  }
  EXPECT_GE(static_cast<double>(hits) / total, 0.9);
}

// The memory promise: with L far above the chunk, no scratch buffer reaches batch x L floats
// (parameters, the gradient buffer and optimiser state are model-sized, not batch-sized).
TEST(OutputLayerMemory, NoBatchTimesLabelsBufferAtLargeL) {
  for (OutputLayer layer : {OutputLayer::kFull, OutputLayer::kShortlist}) {
    ModelConfig c = test::fixed_model();
    c.num_features = 50;
    c.num_labels = 200000;
    c.hidden = {8};
    c.optimizer.kind = OptimizerKind::kSgd;
    c.output_layer = layer;
    c.shortlist.score_chunk = 4096;
    c.shortlist.rebuild_steps = 1000;
    cpu::CpuDevice d(0, c, 2);
    const index_t rows = 64;
    const CsrBatch batch = random_batch(c.num_features, c.num_labels, rows, 8);
    d.train_step(batch, 0.1f);
    d.gradient(batch, 1.0f);
    d.apply_update(0.1f);
    const int k = 5;
    std::vector<col_t> ids(rows * k);
    std::vector<float> s(rows * k);
    d.predict_topk(batch, k, ids.data(), s.data());
    const std::size_t largest = d.largest_scratch_floats();
    EXPECT_LE(largest, static_cast<std::size_t>(rows * c.shortlist.score_chunk))
        << to_string(layer);
    EXPECT_LT(largest, static_cast<std::size_t>(rows * c.num_labels) / 40) << to_string(layer);
  }
}

TEST(OutputLayerConfig, NamesRoundTripAndKnobsAreChecked) {
  for (OutputLayer l : {OutputLayer::kFull, OutputLayer::kShortlist, OutputLayer::kAuto}) {
    EXPECT_EQ(parse_output_layer(to_string(l)), l);
  }
  EXPECT_THROW(parse_output_layer("sampled"), InvalidArgument);
  ModelConfig c = config_of(Loss::kSoftmax);
  c.output_layer = OutputLayer::kAuto;
  c.shortlist.auto_labels = 36;
  EXPECT_TRUE(c.uses_shortlist());
  c.shortlist.auto_labels = 37;
  EXPECT_FALSE(c.uses_shortlist());
  c.shortlist.score_chunk = 0;
  EXPECT_THROW(c.validate(), InvalidArgument);
  c.shortlist.score_chunk = 16;
  c.shortlist.ann_ef_search = 3;
  c.shortlist.hard_negatives = 4;
  EXPECT_THROW(c.validate(), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
