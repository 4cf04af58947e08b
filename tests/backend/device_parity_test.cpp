// Every Device operation on the device under test against the CPU reference device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "tests/backend/parity_fixture.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 20240611;  // printed by SCOPED_TRACE on failure

TEST_P(DeviceParity, InitialParametersAreIdentical) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  EXPECT_EQ(params_of(*d), params_of(*ref));  // initialisation is counter-based: bitwise
}

TEST_P(DeviceParity, WriteThenReadParamsRoundTrips) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto d = dut(c);
  std::vector<float> p(static_cast<size_t>(d->layout().total()));
  for (size_t i = 0; i < p.size(); ++i) p[i] = uniform01(kSeed + 1, i) - 0.5f;
  d->write_params(p.data());
  EXPECT_EQ(params_of(*d), p);
}

TEST_P(DeviceParity, WriteThenReadGradientRoundTrips) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto d = dut(c);
  std::vector<float> g(static_cast<size_t>(d->layout().total()));
  for (size_t i = 0; i < g.size(); ++i) g[i] = uniform01(kSeed + 2, i) - 0.5f;
  d->write_gradient(g.data());
  EXPECT_EQ(gradient_of(*d), g);
}

// predict_topk: the loss of the batch, the top-k ids (exact) and scores (raw logits).
void check_predict(Device& ref, Device& d, const CsrBatch& b, int k) {
  const size_t n = static_cast<size_t>(b.rows()) * k;
  std::vector<col_t> ref_ids(n), ids(n);
  std::vector<float> ref_scores(n), scores(n);
  const float ref_loss = ref.predict_topk(b, k, ref_ids.data(), ref_scores.data());
  const float loss = d.predict_topk(b, k, ids.data(), scores.data());
  EXPECT_NEAR(loss, ref_loss, kLossTol * std::fabs(ref_loss));
  EXPECT_EQ(ids, ref_ids);
  expect_all_near(scores, ref_scores, kScoreTol, "top-k scores");
}

TEST_P(DeviceParity, PredictTopkSoftmaxMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  check_predict(*ref, *d, small_batch(c, 48, kSeed + 3), 5);
}

TEST_P(DeviceParity, PredictTopkBceMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kBce, OptimizerKind::kSgd, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  check_predict(*ref, *d, small_batch(c, 48, kSeed + 4), 3);
}

TEST_P(DeviceParity, PredictTopkPadsWhenKExceedsLabels) {
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  c.num_labels = 6;
  auto ref = reference(c);
  auto d = dut(c);
  const CsrBatch b = small_batch(c, 8, kSeed + 5);
  check_predict(*ref, *d, b, 10);
  std::vector<col_t> ids(static_cast<size_t>(b.rows()) * 10);
  std::vector<float> scores(ids.size());
  d->predict_topk(b, 10, ids.data(), scores.data());
  EXPECT_EQ(ids[6], -1);
  EXPECT_TRUE(std::isinf(scores[9]) && scores[9] < 0);
}

void check_gradient(Device& ref, Device& d, const CsrBatch& b, float scale) {
  const float ref_loss = ref.gradient(b, scale);
  const float loss = d.gradient(b, scale);
  EXPECT_NEAR(loss, ref_loss, kLossTol * std::fabs(ref_loss));
  std::vector<float> rg(static_cast<size_t>(ref.layout().total())), g(rg.size());
  ref.read_gradient(rg.data());
  d.read_gradient(g.data());
  expect_blocks_near(ref.layout(), g, rg, kGradRelTol, kGradAbsTol, "gradient");
}

TEST_P(DeviceParity, GradientSoftmaxMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  check_gradient(*ref, *d, small_batch(c, 40, kSeed + 6), 0.5f);
  // A second, different batch: stale first-layer rows of the first must be cleared.
  check_gradient(*ref, *d, small_batch(c, 24, kSeed + 7), 1.0f);
}

TEST_P(DeviceParity, GradientBceMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kBce, OptimizerKind::kSgd, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  check_gradient(*ref, *d, small_batch(c, 40, kSeed + 8), 2.0f);
}

// Dropout and label smoothing: the mask is counter-based, so both backends drop the same
// elements and the gradients agree to float tolerance; a second gradient() at the same step
// reuses the mask.
TEST_P(DeviceParity, GradientWithDropoutAndLabelSmoothingMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  c.dropout = 0.4f;
  c.label_smoothing = 0.1f;
  auto ref = reference(c);
  auto d = dut(c);
  check_gradient(*ref, *d, small_batch(c, 40, kSeed + 9), 1.0f);
  check_gradient(*ref, *d, small_batch(c, 40, kSeed + 9), 1.0f);
}

// Adam parameters after `steps` steps at `lr` (see kAdamMismatchShare).
void expect_adam_close(const std::vector<float>& p, const std::vector<float>& rp, float lr,
                       int steps) {
  ASSERT_EQ(p.size(), rp.size());
  size_t off = 0;
  double worst = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(p[i]) - rp[i]);
    worst = std::max(worst, diff);
    if (diff > kAdamParamTol) ++off;
  }
  EXPECT_LE(static_cast<double>(off), kAdamMismatchShare * p.size())
      << off << " of " << p.size() << " parameters differ by more than " << kAdamParamTol;
  EXPECT_LE(worst, 2.0 * lr * steps);
}

// Runs `steps` train steps on both devices and compares the losses and final parameters.
void check_training(Device& ref, Device& d, const ModelConfig& c, int steps, float lr, bool adam) {
  for (int s = 0; s < steps; ++s) {
    const CsrBatch b = small_batch(c, 32, kSeed + 100 + s);
    const float ref_loss = ref.train_step(b, lr);
    const float loss = d.train_step(b, lr);
    EXPECT_NEAR(loss, ref_loss, 1e-4 * std::fabs(ref_loss)) << "step " << s;
  }
  std::vector<float> rp(static_cast<size_t>(ref.layout().total())), p(rp.size());
  ref.read_params(rp.data());
  d.read_params(p.data());
  if (!adam) {
    expect_all_near(p, rp, kSgdParamTol, "parameters after SGD");
    return;
  }
  expect_adam_close(p, rp, lr, steps);
}

TEST_P(DeviceParity, TrainStepSgdMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  check_training(*ref, *d, c, 4, 0.5f, false);
}

TEST_P(DeviceParity, TrainStepMomentumWeightDecayBceMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ModelConfig c = small_config(Loss::kBce, OptimizerKind::kSgd, kSeed);
  c.optimizer.momentum = 0.9f;
  c.optimizer.weight_decay = 1e-3f;
  auto ref = reference(c);
  auto d = dut(c);
  check_training(*ref, *d, c, 4, 2.0f, false);
}

TEST_P(DeviceParity, TrainStepAdamMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kAdam, kSeed);
  c.optimizer.weight_decay = 1e-4f;
  auto ref = reference(c);
  auto d = dut(c);
  check_training(*ref, *d, c, 3, 1e-3f, true);
}

TEST_P(DeviceParity, TrainStepSgdWithDropoutMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  c.dropout = 0.3f;
  c.input_dropout = 0.2f;
  c.label_smoothing = 0.2f;
  auto ref = reference(c);
  auto d = dut(c);
  check_training(*ref, *d, c, 4, 0.5f, false);
}

TEST_P(DeviceParity, TrainStepReducesLossOnRepeatedBatch) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kAdam, kSeed);
  auto d = dut(c);
  const CsrBatch b = small_batch(c, 32, kSeed + 9);
  const float first = d->train_step(b, 5e-2f);
  float last = first;
  for (int s = 0; s < 20; ++s) last = d->train_step(b, 5e-2f);
  EXPECT_LT(last, 0.5f * first);
}

TEST_P(DeviceParity, GradientThenApplyUpdateEqualsTrainStep) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kAdam, kSeed);
  auto a = dut(c);
  auto b = dut(c);
  for (int s = 0; s < 2; ++s) {
    const CsrBatch batch = small_batch(c, 32, kSeed + 10 + s);
    a->train_step(batch, 1e-2f);
    b->gradient(batch, 1.0f);
    b->apply_update(1e-2f);
  }
  expect_adam_close(params_of(*b), params_of(*a), 1e-2f, 2);
}

TEST_P(DeviceParity, ApplyUpdateAfterWriteGradientMatchesCpu) {
  // The all-reduce path: a gradient written from outside, first-layer rows found by scanning.
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kAdam, kSeed);
  auto ref = reference(c);
  auto d = dut(c);
  std::vector<float> g(static_cast<size_t>(ref->layout().total()), 0.0f);
  const LayerSlice& s0 = ref->layout().layers()[0];
  for (index_t k = s0.b_offset; k < ref->layout().total(); ++k) {
    g[static_cast<size_t>(k)] = uniform01(kSeed + 11, static_cast<std::uint64_t>(k)) - 0.5f;
  }
  for (index_t f : {2, 17, 301}) {  // three touched first-layer rows
    for (index_t j = 0; j < s0.out; ++j) g[static_cast<size_t>(f * s0.out + j)] = 0.01f * (j + 1);
  }
  ref->write_gradient(g.data());
  d->write_gradient(g.data());
  ref->apply_update(1e-2f);
  d->apply_update(1e-2f);
  expect_all_near(params_of(*d), params_of(*ref), kSgdParamTol, "parameters");
}

TEST_P(DeviceParity, ResetOptimizerRestartsAdam) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kAdam, kSeed);
  auto a = dut(c);
  auto fresh = dut(c);
  const CsrBatch b1 = small_batch(c, 16, kSeed + 12);
  const CsrBatch b2 = small_batch(c, 16, kSeed + 13);
  a->train_step(b1, 1e-2f);
  const std::vector<float> after_one = params_of(*a);
  a->reset_optimizer();
  a->train_step(b2, 1e-2f);
  fresh->write_params(after_one.data());
  fresh->train_step(b2, 1e-2f);
  // Without the reset, `a` would take a second-step Adam update (bias corrections of t = 2).
  expect_adam_close(params_of(*a), params_of(*fresh), 1e-2f, 1);
}

TEST_P(DeviceParity, RejectsOutOfRangeIds) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto d = dut(c);
  CsrBatch bad_feature = small_batch(c, 4, kSeed + 14);
  bad_feature.x_indices[0] = static_cast<col_t>(c.num_features);
  EXPECT_THROW(d->train_step(bad_feature, 0.1f), InvalidArgument);
  CsrBatch bad_label = small_batch(c, 4, kSeed + 15);
  bad_label.y_indices[0] = static_cast<col_t>(c.num_labels + 3);
  EXPECT_THROW(d->gradient(bad_label, 1.0f), InvalidArgument);
  // The device stays usable after a rejected batch.
  EXPECT_NO_THROW(d->train_step(small_batch(c, 4, kSeed + 16), 0.1f));
}

HETSGD_INSTANTIATE_ALL_DEVICES(DeviceParity);

// Not parameterised: runs everywhere, with or without a GPU.
TEST(CudaSeam, MissingOrdinalThrowsDeviceUnavailable) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  EXPECT_THROW(make_device(DeviceId::cuda(cuda_device_count() + 3), c), DeviceUnavailable);
}

}  // namespace
}  // namespace hetsgd::test
