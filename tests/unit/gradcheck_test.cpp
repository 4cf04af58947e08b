// Finite-difference check of the CPU device's analytic gradient: every parameter of every layer
// (sparse W0/b0, hidden dense layers, output layer), both losses, 1 and 2 hidden layers, the
// output layer scored at once and in chunks; and the shortlisted loss's own gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/random.h"
#include "kernels/cpu/api.h"

namespace hetsgd {
namespace {

// A small batch with 2..5 features per row (values in [0.5, 1.5)), 1..3 labels per row, and
// one row without labels.
CsrBatch small_batch(index_t d, index_t labels, index_t rows, std::uint64_t seed) {
  SplitMix64 rng(seed);
  CsrBatch b;
  b.num_features = d;
  b.num_labels = labels;
  for (index_t r = 0; r < rows; ++r) {
    const int nf = 2 + static_cast<int>(rng() % 4);
    std::vector<col_t> fs;
    while (static_cast<int>(fs.size()) < nf) {
      const auto f = static_cast<col_t>(rng() % d);
      bool dup = false;
      for (col_t g : fs) dup = dup || g == f;
      if (!dup) fs.push_back(f);
    }
    std::sort(fs.begin(), fs.end());
    for (col_t f : fs) {
      b.x_indices.push_back(f);
      b.x_values.push_back(0.5f + rng.uniform());
    }
    b.x_indptr.push_back(static_cast<index_t>(b.x_indices.size()));
    const int nl = r == 1 ? 0 : 1 + static_cast<int>(rng() % 3);
    std::vector<col_t> ls;
    while (static_cast<int>(ls.size()) < nl) {
      const auto l = static_cast<col_t>(rng() % labels);
      bool dup = false;
      for (col_t g : ls) dup = dup || g == l;
      if (!dup) ls.push_back(l);
    }
    for (col_t l : ls) b.y_indices.push_back(l);
    b.y_indptr.push_back(static_cast<index_t>(b.y_indices.size()));
  }
  return b;
}

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
  ModelConfig cfg;
  cfg.num_features = 12;
  cfg.num_labels = 7;
  cfg.hidden = GetParam().hidden;
  cfg.loss = GetParam().loss;
  cfg.shortlist.score_chunk = GetParam().chunk;
  cfg.dropout = GetParam().dropout;
  cfg.label_smoothing = GetParam().smoothing;
  cfg.input_dropout = GetParam().input_dropout;
  cfg.seed = 11;
  auto dev = cpu::make_device(0, cfg, DeviceOptions{2, false});
  const CsrBatch batch = small_batch(cfg.num_features, cfg.num_labels, 6, 5);
  const index_t n = dev->layout().total();
  std::vector<float> params(n), grad(n);
  dev->read_params(params.data());
  // Scale the gradient so BCE's 1/(rows*labels) mean does not push it under float noise.
  const float scale = cfg.loss == Loss::kBce ? static_cast<float>(cfg.num_labels) : 1.0f;
  dev->gradient(batch, scale);
  dev->read_gradient(grad.data());

  std::vector<col_t> top(batch.rows());
  std::vector<float> top_s(batch.rows());
  // Evaluation has neither dropout nor smoothing, so those cases difference the training loss
  // of gradient(): with no optimiser step in between, every call draws the same dropout mask.
  const bool train_loss =
      cfg.dropout > 0.0f || cfg.label_smoothing > 0.0f || cfg.input_dropout > 0.0f;
  auto loss_at = [&](const std::vector<float>& p) {
    dev->write_params(p.data());
    if (train_loss) return static_cast<double>(dev->gradient(batch, scale)) * scale;
    return static_cast<double>(dev->predict_topk(batch, 1, top.data(), top_s.data())) * scale;
  };
  const float eps = 4e-3f;
  int checked = 0, nonzero = 0;
  for (index_t k = 0; k < n; ++k) {
    std::vector<float> p = params;
    p[k] = params[k] + eps;
    const double up = loss_at(p);
    p[k] = params[k] - eps;
    const double down = loss_at(p);
    const double numeric = (up - down) / (2.0 * eps);
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
  ModelConfig cfg;
  cfg.num_features = 12;
  cfg.num_labels = 40;
  cfg.hidden = {8};
  cfg.loss = GetParam();
  cfg.seed = 11;
  cfg.output_layer = OutputLayer::kShortlist;
  cfg.shortlist.hard_negatives = 0;
  cfg.shortlist.sampled_negatives = 6;
  auto dev = cpu::make_device(0, cfg, DeviceOptions{2, false});
  const CsrBatch batch = small_batch(cfg.num_features, cfg.num_labels, 6, 5);
  const index_t n = dev->layout().total();
  std::vector<float> params(n), grad(n);
  dev->read_params(params.data());
  const float scale = cfg.loss == Loss::kBce ? static_cast<float>(cfg.num_labels) : 1.0f;
  dev->gradient(batch, scale);
  dev->read_gradient(grad.data());
  auto loss_at = [&](const std::vector<float>& p) {
    dev->write_params(p.data());
    return static_cast<double>(dev->gradient(batch, scale)) * scale;
  };
  const float eps = 4e-3f;
  int nonzero = 0, zero_out_cols = 0;
  const LayerSlice& out = dev->layout().layers().back();
  for (index_t k = 0; k < n; ++k) {
    std::vector<float> p = params;
    p[k] = params[k] + eps;
    const double up = loss_at(p);
    p[k] = params[k] - eps;
    const double down = loss_at(p);
    const double numeric = (up - down) / (2.0 * eps);
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
