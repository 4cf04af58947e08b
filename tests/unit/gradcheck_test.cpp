// Finite-difference check of the CPU device's analytic gradient: every parameter of every layer
// (sparse W0/b0, hidden dense layers, output layer), both losses, 1 and 2 hidden layers, the
// output layer scored at once and in chunks; and the shortlisted loss's own gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/random.h"
#include "kernels/cpu/api.h"
#include "tests/common/random_batch.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

// A small batch with 2..5 features per row (values in [0.5, 1.5)), 1..3 labels per row, and
// one row without labels.
CsrBatch small_batch(index_t d, index_t labels, index_t rows, std::uint64_t seed) {
  SplitMix64 rng(seed);
  CsrBatch b = test::empty_batch(d, labels);
  // `n` distinct ids of [0, bound) in the order drawn.
  const auto distinct = [&rng](int n, index_t bound) {
    std::vector<col_t> ids;
    while (static_cast<int>(ids.size()) < n) {
      const auto id = static_cast<col_t>(rng() % bound);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
  };
  for (index_t r = 0; r < rows; ++r) {
    std::vector<col_t> fs = distinct(2 + static_cast<int>(rng() % 4), d);
    std::sort(fs.begin(), fs.end());
    test::open_row(b, fs, 0.5f, rng);
    test::close_row(b, distinct(r == 1 ? 0 : 1 + static_cast<int>(rng() % 3), labels));
  }
  return b;
}

// A CPU device of `cfg` at its initial parameters, the batch the checks difference, and the
// analytic gradient there. The gradient is scaled so that BCE's 1/(rows*labels) mean does not
// push it under float noise.
struct Analytic {
  explicit Analytic(const ModelConfig& cfg)
      : dev(cpu::make_device(0, cfg, DeviceOptions{2, false})),
        batch(small_batch(cfg.num_features, cfg.num_labels, 6, 5)),
        scale(cfg.loss == Loss::kBce ? static_cast<float>(cfg.num_labels) : 1.0f),
        params(test::params_of(*dev)) {
    dev->gradient(batch, scale);
    grad = test::grad_of(*dev);
  }
  // gradient()'s loss of the batch at parameters `p`, unscaled.
  double training_loss(const std::vector<float>& p) const {
    dev->write_params(p.data());
    return static_cast<double>(dev->gradient(batch, scale)) * scale;
  }
  // The central difference of `loss_at` (a loss as a function of the parameters) in
  // parameter k, at steps of 4e-3.
  template <typename LossAt>
  double central_difference(index_t k, LossAt loss_at) const {
    const float eps = 4e-3f;
    std::vector<float> p = params;
    p[k] = params[k] + eps;
    const double up = loss_at(p);
    p[k] = params[k] - eps;
    const double down = loss_at(p);
    return (up - down) / (2.0 * eps);
  }
  std::unique_ptr<Device> dev;
  CsrBatch batch;
  float scale;
  std::vector<float> params, grad;
};

struct GradCase {
  Loss loss;
  std::vector<index_t> hidden;
  index_t chunk = 4096;  ///< labels scored at a time (< num_labels: the chunked path)
  float dropout = 0.0f;
  float smoothing = 0.0f;
  float input_dropout = 0.0f;
};

class GradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, AnalyticMatchesCentralDifferences) {
  ModelConfig cfg = test::fixed_model();
  cfg.num_features = 12;
  cfg.num_labels = 7;
  cfg.hidden = GetParam().hidden;
  cfg.loss = GetParam().loss;
  cfg.shortlist.score_chunk = GetParam().chunk;
  cfg.dropout = GetParam().dropout;
  cfg.label_smoothing = GetParam().smoothing;
  cfg.input_dropout = GetParam().input_dropout;
  cfg.seed = 11;
  Analytic at(cfg);
  std::vector<col_t> top(at.batch.rows());
  std::vector<float> top_s(at.batch.rows());
  // Evaluation has neither dropout nor smoothing, so those cases difference the training loss
  // of gradient(): with no optimiser step in between, every call draws the same dropout mask.
  const bool train_loss =
      cfg.dropout > 0.0f || cfg.label_smoothing > 0.0f || cfg.input_dropout > 0.0f;
  auto loss_at = [&](const std::vector<float>& p) {
    if (train_loss) return at.training_loss(p);
    at.dev->write_params(p.data());
    return static_cast<double>(at.dev->predict_topk(at.batch, 1, top.data(), top_s.data())) *
           at.scale;
  };
  const std::vector<float>& grad = at.grad;
  const auto n = static_cast<index_t>(grad.size());
  int checked = 0, nonzero = 0;
  for (index_t k = 0; k < n; ++k) {
    const double numeric = at.central_difference(k, loss_at);
    // Float loss rounding (~5e-7) over 2*eps gives ~1e-4 of noise in `numeric`.
    const double tol = 3e-4 + 2e-2 * std::fabs(numeric);
    EXPECT_NEAR(grad[k], numeric, tol) << "parameter " << k << " of " << n;
    ++checked;
    nonzero += grad[k] != 0.0f;
  }
  EXPECT_EQ(checked, n);
  EXPECT_GT(nonzero, n / 4) << "too few non-zero gradient entries for a meaningful check";
}

INSTANTIATE_TEST_SUITE_P(Layers, GradCheck,
                         ::testing::Values(GradCase{Loss::kSoftmax, {8}},
                                           GradCase{Loss::kSoftmax, {8, 6}},
                                           GradCase{Loss::kBce, {8}}, GradCase{Loss::kBce, {8, 6}},
                                           GradCase{Loss::kSoftmax, {8}, 3},
                                           GradCase{Loss::kBce, {8, 6}, 3},
                                           GradCase{Loss::kSoftmax, {8, 6}, 4096, 0.4f},
                                           GradCase{Loss::kSoftmax, {8}, 4096, 0.0f, 0.2f},
                                           GradCase{Loss::kSoftmax, {8, 6}, 4096, 0.4f, 0.1f},
                                           GradCase{Loss::kBce, {8}, 3, 0.4f},
                                           GradCase{Loss::kSoftmax, {8}, 4096, 0.3f, 0.0f, 0.3f}),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return std::string(to_string(info.param.loss)) + "_hidden" +
                                  std::to_string(info.param.hidden.size()) +
                                  (info.param.chunk < 7 ? "_chunked" : "") +
                                  (info.param.dropout > 0.0f ? "_dropout" : "") +
                                  (info.param.smoothing > 0.0f ? "_smoothing" : "") +
                                  (info.param.input_dropout > 0.0f ? "_input_dropout" : "");
                         });

// The shortlisted loss (uniform negatives with the sampling correction, no index) is a smooth
// function of the parameters for a fixed candidate set; gradient() at step 0 always draws the
// same set, so its returned loss can be differenced.
class ShortlistGradCheck : public ::testing::TestWithParam<Loss> {};

TEST_P(ShortlistGradCheck, AnalyticMatchesCentralDifferences) {
  ModelConfig cfg = test::fixed_model();
  cfg.num_features = 12;
  cfg.num_labels = 40;
  cfg.hidden = {8};
  cfg.loss = GetParam();
  cfg.seed = 11;
  cfg.output_layer = OutputLayer::kShortlist;
  cfg.shortlist.hard_negatives = 0;
  cfg.shortlist.sampled_negatives = 6;
  Analytic at(cfg);
  const std::vector<float>& grad = at.grad;
  const auto n = static_cast<index_t>(grad.size());
  int nonzero = 0, zero_out_cols = 0;
  const LayerSlice& out = at.dev->layout().layers().back();
  for (index_t k = 0; k < n; ++k) {
    const double numeric =
        at.central_difference(k, [&](const std::vector<float>& p) { return at.training_loss(p); });
    EXPECT_NEAR(grad[k], numeric, 3e-4 + 2e-2 * std::fabs(numeric)) << "parameter " << k;
    nonzero += grad[k] != 0.0f;
    zero_out_cols += k >= out.b_offset && grad[k] == 0.0f;
  }
  EXPECT_GT(nonzero, n / 8);
  // Labels outside the candidate set get no gradient: the layer is really shortlisted.
  EXPECT_GT(zero_out_cols, 0);
}

INSTANTIATE_TEST_SUITE_P(Losses, ShortlistGradCheck, ::testing::Values(Loss::kSoftmax, Loss::kBce),
                         [](const ::testing::TestParamInfo<Loss>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
}  // namespace hetsgd
