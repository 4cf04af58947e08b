// Dropout and label smoothing on the CPU device: the mask's rate and determinism, training-only
// behaviour, the off switch leaving training bitwise unchanged, and the smoothed loss against a
// direct evaluation of its definition. (Gradients: gradcheck_test.cpp; CUDA: backend parity.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/math/dropout.h"
#include "core/math/input_dropout.h"
#include "datasets/synthetic.h"
#include "kernels/cpu/api.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/parallel.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

ModelConfig small_config(float dropout, float smoothing) {
  ModelConfig c = test::fixed_model();
  c.num_features = 300;
  c.num_labels = 40;
  c.hidden = {48, 32};
  c.seed = 5;
  c.dropout = dropout;
  c.label_smoothing = smoothing;
  return c;
}

CsrBatch batch(const ModelConfig& c, std::uint64_t seed) {
  return datasets::power_law_batch(64, c.num_labels, seed, c.num_features, 10.0);
}

std::vector<float> params_after(const ModelConfig& c, int threads, int steps) {
  auto d = cpu::make_device(0, c, DeviceOptions{threads, false});
  for (int s = 0; s < steps; ++s) d->train_step(batch(c, 100 + s), 1e-2f);
  std::vector<float> p(static_cast<size_t>(d->layout().total()));
  d->read_params(p.data());
  return p;
}

TEST(Dropout, MaskKeepsOneMinusPAndPreservesTheMean) {
  for (float p : {0.1f, 0.3f, 0.5f}) {
    const std::uint64_t stream = math::dropout_stream(3, 0, 17, 1);
    const std::uint32_t th = math::dropout_threshold(p);
    const int n = 200000;
    double kept = 0.0, sum = 0.0;
    for (int i = 0; i < n; ++i) {
      kept += math::dropout_keep(stream, i, th);
      sum += math::dropout_apply(1.0f, stream, i, th, 1.0f / (1.0f - p));
    }
    EXPECT_NEAR(kept / n, 1.0 - p, 0.005) << "p " << p;
    EXPECT_NEAR(sum / n, 1.0, 0.01) << "p " << p;
  }
  // Different steps, layers and devices draw different masks.
  const std::uint32_t th = math::dropout_threshold(0.5f);
  int same_step = 0, same_layer = 0, same_device = 0;
  for (int i = 0; i < 1000; ++i) {
    const bool a = math::dropout_keep(math::dropout_stream(3, 0, 17, 1), i, th);
    same_step += a == math::dropout_keep(math::dropout_stream(3, 0, 18, 1), i, th);
    same_layer += a == math::dropout_keep(math::dropout_stream(3, 0, 17, 2), i, th);
    same_device += a == math::dropout_keep(math::dropout_stream(3, 1, 17, 1), i, th);
  }
  for (int same : {same_step, same_layer, same_device}) EXPECT_NEAR(same, 500, 80);
}

TEST(Dropout, TrainingIsIndependentOfTheThreadCount) {
  const ModelConfig c = small_config(0.5f, 0.1f);
  EXPECT_EQ(params_after(c, 1, 5), params_after(c, 2, 5));
}

TEST(Dropout, ChangesTrainingButNotEvaluation) {
  const ModelConfig off = small_config(0.0f, 0.0f);
  const ModelConfig on = small_config(0.5f, 0.0f);
  EXPECT_NE(params_after(off, 2, 3), params_after(on, 2, 3));
  // Same parameters (same seed, no step): prediction ignores dropout.
  auto a = cpu::make_device(0, off, DeviceOptions{2, false});
  auto b = cpu::make_device(0, on, DeviceOptions{2, false});
  const CsrBatch x = batch(off, 7);
  const int k = 5;
  std::vector<col_t> ia(x.rows() * k), ib(ia.size());
  std::vector<float> sa(ia.size()), sb(ia.size());
  EXPECT_EQ(a->predict_topk(x, k, ia.data(), sa.data()),
            b->predict_topk(x, k, ib.data(), sb.data()));
  EXPECT_EQ(ia, ib);
  EXPECT_EQ(sa, sb);
}

TEST(Dropout, OffLeavesTrainingBitwiseUnchanged) {
  // p = 1e-10 runs every dropout kernel with a mask that keeps everything and a scale of
  // exactly 1, so it must reproduce p = 0 (the code path without dropout) bit for bit.
  ASSERT_EQ(math::dropout_threshold(1e-10f), 0u);
  ASSERT_EQ(1.0f / (1.0f - 1e-10f), 1.0f);
  EXPECT_EQ(params_after(small_config(1e-10f, 0.0f), 2, 4), params_after(small_config(0, 0), 2, 4));
}

TEST(Dropout, MaskIsFixedWithinAStepAndChangesWithTheStep) {
  const ModelConfig c = small_config(0.5f, 0.0f);
  auto d = cpu::make_device(0, c, DeviceOptions{2, false});
  const CsrBatch x = batch(c, 9);
  const auto n = static_cast<size_t>(d->layout().total());
  std::vector<float> g1(n), g2(n), g3(n);
  d->gradient(x, 1.0f);
  d->read_gradient(g1.data());
  d->gradient(x, 1.0f);
  d->read_gradient(g2.data());
  EXPECT_EQ(g1, g2);
  std::vector<float> p(n);
  d->read_params(p.data());
  d->apply_update(1e-3f);  // one optimiser step: the next batch gets the next mask
  d->write_params(p.data());
  d->gradient(x, 1.0f);
  d->read_gradient(g3.data());
  EXPECT_NE(g1, g3);
}

TEST(InputDropout, DropsValuesRowByRowAndScalesTheRest) {
  const ModelConfig c = small_config(0.0f, 0.0f);
  const CsrBatch in = batch(c, 11);
  CsrBatch out;
  math::drop_input_features(in, 0.4f, math::dropout_stream(1, 0, 3, math::kInputDropoutLayer),
                            &out);
  ASSERT_EQ(out.rows(), in.rows());
  EXPECT_EQ(out.y_indptr, in.y_indptr);
  EXPECT_EQ(out.y_indices, in.y_indices);
  EXPECT_NEAR(static_cast<double>(out.nnz()) / in.nnz(), 0.6, 0.06);
  for (index_t r = 0; r < in.rows(); ++r) {  // each kept value is in its row, scaled
    index_t k = in.x_indptr[r];
    for (index_t o = out.x_indptr[r]; o < out.x_indptr[r + 1]; ++o) {
      while (in.x_indices[k] != out.x_indices[o]) ++k;
      ASSERT_LT(k, in.x_indptr[r + 1]);
      EXPECT_EQ(out.x_values[o], in.x_values[k] * (1.0f / 0.6f));
    }
  }
  ModelConfig on = c;
  on.input_dropout = 0.3f;
  EXPECT_EQ(params_after(on, 1, 4), params_after(on, 2, 4));
  EXPECT_NE(params_after(on, 2, 4), params_after(c, 2, 4));
}

TEST(LabelSmoothing, LossAndGradientMatchTheSmoothedTarget) {
  const index_t n = 7;
  const float e = 0.2f;
  CsrBatch b;
  b.num_labels = n;
  b.y_indices = {1, 4, 2};  // row 0: {1, 4}; row 1: none; row 2: {2}
  b.y_indptr = {0, 2, 2, 3};
  b.x_indptr = {0, 0, 0, 0};
  std::vector<float> z(3 * n);
  for (size_t i = 0; i < z.size(); ++i) z[i] = 0.37f * static_cast<float>(i % 5) - 0.6f;
  const std::vector<float> z0 = z;
  std::vector<float> rl;
  float loss = 0.0f;
  tbb::task_arena(1).execute(
      [&] { loss = cpu::loss_and_grad(b, n, Loss::kSoftmax, 1.0f, z.data(), &rl, e); });
  double want_loss = 0.0;
  for (index_t r = 0; r < 3; ++r) {
    const index_t y0 = b.y_indptr[r], ny = b.y_indptr[r + 1] - y0;
    double m = -1e30, s = 0.0;
    for (index_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(z0[r * n + j]));
    for (index_t j = 0; j < n; ++j) s += std::exp(z0[r * n + j] - m);
    for (index_t j = 0; j < n; ++j) {
      double t = 0.0;
      if (ny > 0) {
        t = e / n;
        for (index_t i = 0; i < ny; ++i) t += (b.y_indices[y0 + i] == j) * (1.0 - e) / ny;
      }
      const double p = std::exp(z0[r * n + j] - m) / s;
      want_loss -= t * std::log(p) / 3.0;
      const double want_grad = ny > 0 ? (p - t) / 3.0 : 0.0;
      EXPECT_NEAR(z[r * n + j], want_grad, 1e-6) << "row " << r << " label " << j;
    }
  }
  EXPECT_NEAR(loss, want_loss, 1e-5);
}

TEST(Regularisation, OutOfRangeValuesAreRejected) {
  ModelConfig c = small_config(0.96f, 0.0f);
  EXPECT_THROW(c.validate(), InvalidArgument);
  c.dropout = -0.1f;
  EXPECT_THROW(c.validate(), InvalidArgument);
  c.dropout = 0.5f;
  c.input_dropout = 0.99f;
  EXPECT_THROW(c.validate(), InvalidArgument);
  c.input_dropout = 0.0f;
  c.label_smoothing = 0.6f;
  EXPECT_THROW(c.validate(), InvalidArgument);
  c.label_smoothing = 0.1f;
  EXPECT_NO_THROW(c.validate());
  c.loss = Loss::kBce;
  EXPECT_THROW(c.validate(), InvalidArgument);
  // The smoothed loss is implemented on the one-block output layer only.
  ModelConfig chunked = small_config(0.0f, 0.1f);
  chunked.shortlist.score_chunk = 8;
  EXPECT_THROW(cpu::make_device(0, chunked, DeviceOptions{1, false}), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
