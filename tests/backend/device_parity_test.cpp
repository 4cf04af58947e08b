// Every Device operation on the device under test against the CPU reference device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "tests/backend/parity_fixture.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 20240611;  // printed by SCOPED_TRACE on failure

// The CPU reference and the device under test `id`, both built from `config`; failures while
// it lives name the seed.
struct Both {
  Both(DeviceId id, const ModelConfig& c)
      : config(c), ref(make_device(DeviceId::cpu(), c)), dut(make_device(id, c)) {}
  ::testing::ScopedTrace trace{__FILE__, __LINE__, "seed " + std::to_string(kSeed)};
  ModelConfig config = test::fixed_model();
  std::unique_ptr<Device> ref, dut;
};

TEST_P(DeviceParity, InitialParametersAreIdentical) {
  const Both on(GetParam(), small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed));
  EXPECT_EQ(params_of(*on.dut), params_of(*on.ref));  // initialisation is counter-based: bitwise
}

// One value in [-0.5, 0.5) per parameter of `layout`, from `seed`.
std::vector<float> noise(const ParamLayout& layout, std::uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(layout.total()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = uniform01(seed, i) - 0.5f;
  return v;
}

TEST_P(DeviceParity, WriteThenReadParamsRoundTrips) {
  auto d = dut(small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed));
  const std::vector<float> p = noise(d->layout(), kSeed + 1);
  d->write_params(p.data());
  EXPECT_EQ(params_of(*d), p);
}

TEST_P(DeviceParity, WriteThenReadGradientRoundTrips) {
  auto d = dut(small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed));
  const std::vector<float> g = noise(d->layout(), kSeed + 2);
  d->write_gradient(g.data());
  EXPECT_EQ(gradient_of(*d), g);
}

// predict_topk on a batch of `rows` (seed kSeed + salt): the loss of the batch, the top-k ids
// (exact) and scores (raw logits).
void check_predict(const Both& on, index_t rows, std::uint64_t salt, int k) {
  const CsrBatch b = small_batch(on.config, rows, kSeed + salt);
  const size_t n = static_cast<size_t>(b.rows()) * k;
  std::vector<col_t> ref_ids(n), ids(n);
  std::vector<float> ref_scores(n), scores(n);
  const float ref_loss = on.ref->predict_topk(b, k, ref_ids.data(), ref_scores.data());
  const float loss = on.dut->predict_topk(b, k, ids.data(), scores.data());
  EXPECT_NEAR(loss, ref_loss, kLossTol * std::fabs(ref_loss));
  EXPECT_EQ(ids, ref_ids);
  expect_all_near(scores, ref_scores, kScoreTol, "top-k scores");
}

TEST_P(DeviceParity, PredictTopkSoftmaxMatchesCpu) {
  check_predict(Both(GetParam(), small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed)), 48, 3,
                5);
}

TEST_P(DeviceParity, PredictTopkBceMatchesCpu) {
  check_predict(Both(GetParam(), small_config(Loss::kBce, OptimizerKind::kSgd, kSeed)), 48, 4, 3);
}

TEST_P(DeviceParity, PredictTopkPadsWhenKExceedsLabels) {
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  c.num_labels = 6;
  const Both on(GetParam(), c);
  check_predict(on, 8, 5, 10);
  const CsrBatch b = small_batch(c, 8, kSeed + 5);
  std::vector<col_t> ids(static_cast<size_t>(b.rows()) * 10);
  std::vector<float> scores(ids.size());
  on.dut->predict_topk(b, 10, ids.data(), scores.data());
  EXPECT_EQ(ids[6], -1);
  EXPECT_TRUE(std::isinf(scores[9]) && scores[9] < 0);
}

// gradient() on a batch of `rows` (seed kSeed + salt) scaled by `scale`: loss and gradient.
void check_gradient(const Both& on, index_t rows, std::uint64_t salt, float scale) {
  const CsrBatch b = small_batch(on.config, rows, kSeed + salt);
  Device& ref = *on.ref;
  const float ref_loss = ref.gradient(b, scale);
  const float loss = on.dut->gradient(b, scale);
  EXPECT_NEAR(loss, ref_loss, kLossTol * std::fabs(ref_loss));
  std::vector<float> rg(static_cast<size_t>(ref.layout().total())), g(rg.size());
  ref.read_gradient(rg.data());
  on.dut->read_gradient(g.data());
  expect_blocks_near(ref.layout(), g, rg, kGradRelTol, kGradAbsTol, "gradient");
}

TEST_P(DeviceParity, GradientSoftmaxMatchesCpu) {
  const Both on(GetParam(), small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed));
  check_gradient(on, 40, 6, 0.5f);
  // A second, different batch: stale first-layer rows of the first must be cleared.
  check_gradient(on, 24, 7, 1.0f);
}

TEST_P(DeviceParity, GradientBceMatchesCpu) {
  check_gradient(Both(GetParam(), small_config(Loss::kBce, OptimizerKind::kSgd, kSeed)), 40, 8,
                 2.0f);
}

// Dropout and label smoothing: the mask is counter-based, so both backends drop the same
// elements and the gradients agree to float tolerance; a second gradient() at the same step
// reuses the mask.
TEST_P(DeviceParity, GradientWithDropoutAndLabelSmoothingMatchesCpu) {
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  c.dropout = 0.4f;
  c.label_smoothing = 0.1f;
  const Both on(GetParam(), c);
  check_gradient(on, 40, 9, 1.0f);
  check_gradient(on, 40, 9, 1.0f);
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

// Runs `steps` train steps at `lr` on both devices of `config` and compares the losses and
// final parameters (Adam's within its mismatch share, other optimizers' all close).
void check_training(DeviceId id, const ModelConfig& config, int steps, float lr) {
  const Both on(id, config);
  for (int s = 0; s < steps; ++s) {
    const CsrBatch b = small_batch(config, 32, kSeed + 100 + s);
    const float ref_loss = on.ref->train_step(b, lr);
    const float loss = on.dut->train_step(b, lr);
    EXPECT_NEAR(loss, ref_loss, 1e-4 * std::fabs(ref_loss)) << "step " << s;
  }
  std::vector<float> rp(static_cast<size_t>(on.ref->layout().total())), p(rp.size());
  on.ref->read_params(rp.data());
  on.dut->read_params(p.data());
  if (config.optimizer.kind != OptimizerKind::kAdam) {
    expect_all_near(p, rp, kSgdParamTol, "parameters after SGD");
    return;
  }
  expect_adam_close(p, rp, lr, steps);
}

TEST_P(DeviceParity, TrainStepSgdMatchesCpu) {
  check_training(GetParam(), small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed), 4, 0.5f);
}

TEST_P(DeviceParity, TrainStepMomentumWeightDecayBceMatchesCpu) {
  ModelConfig c = small_config(Loss::kBce, OptimizerKind::kSgd, kSeed);
  c.optimizer.momentum = 0.9f;
  c.optimizer.weight_decay = 1e-3f;
  check_training(GetParam(), c, 4, 2.0f);
}

TEST_P(DeviceParity, TrainStepAdamMatchesCpu) {
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kAdam, kSeed);
  c.optimizer.weight_decay = 1e-4f;
  check_training(GetParam(), c, 3, 1e-3f);
}

TEST_P(DeviceParity, TrainStepSgdWithDropoutMatchesCpu) {
  ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  c.dropout = 0.3f;
  c.input_dropout = 0.2f;
  c.label_smoothing = 0.2f;
  check_training(GetParam(), c, 4, 0.5f);
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
