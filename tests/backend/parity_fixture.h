/// \file tests/backend/parity_fixture.h
/// Shared pieces of the backend parity tests: the device fixture parameterised over DeviceId,
/// named tolerances, small models and batches, and vector comparisons that report the seed.
///
/// Every test builds the device under test (DUT) and a CPU reference device from the same
/// ModelConfig and seed, feeds both the same batches and compares. With the `cpu` parameter
/// the DUT is a second CPU device (checks determinism); with `cuda:0` it is the GPU replica.
/// The `cuda:0` instance is always instantiated, so it reports Skipped without a GPU (and fails
/// under HETSGD_REQUIRE_GPU=1).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/random.h"
#include "datasets/synthetic.h"
#include "kernels/registry.h"
#include "tests/common/gpu_test.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {

/// Relative tolerance of batch-mean losses (float sums in a different order).
constexpr double kLossTol = 1e-5;
/// Gradient elements, block by block (each layer's weights and bias apart):
/// |a - b| <= kGradRelTol * max|ref over the block| + kGradAbsTol. Relative to the block, not
/// to the whole model, so a wrong bias block cannot hide behind the largest weight gradient.
constexpr double kGradRelTol = 2e-5;
constexpr double kGradAbsTol = 1e-9;
/// Top-k scores (raw logits) and parameters after SGD steps: absolute.
constexpr double kScoreTol = 1e-4;
constexpr double kSgdParamTol = 1e-5;
/// Adam normalises every step to ~lr, so a gradient element whose value is at float noise
/// level can take either sign on two backends. Allowed: this share of parameters off by more
/// than kAdamParamTol, none off by more than 2 * lr * steps.
constexpr double kAdamParamTol = 1e-5;
constexpr double kAdamMismatchShare = 2e-3;

/// A small model with two hidden layers (so dense hidden layers are exercised too).
inline ModelConfig small_config(Loss loss, OptimizerKind opt, std::uint64_t seed) {
  ModelConfig c = test::fixed_model();
  c.num_features = 400;
  c.num_labels = 60;
  c.hidden = {32, 24};
  c.loss = loss;
  c.optimizer.kind = opt;
  c.seed = seed;
  return c;
}

/// A power-law batch shaped for small_config(), plus one row without labels at the end.
inline CsrBatch small_batch(const ModelConfig& c, index_t rows, std::uint64_t seed) {
  CsrBatch b = datasets::power_law_batch(rows, c.num_labels, seed, c.num_features, 12.0);
  // A row with features but no label: loss 0 and no gradient by convention.
  b.x_indices.push_back(3);
  b.x_values.push_back(0.5f);
  b.x_indices.push_back(7);
  b.x_values.push_back(-0.25f);
  b.x_indptr.push_back(static_cast<index_t>(b.x_indices.size()));
  b.y_indptr.push_back(static_cast<index_t>(b.y_indices.size()));
  return b;
}

/// Largest |x| of a vector.
inline double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

/// Asserts |a_i - b_i| <= tol for every element, naming the first offender.
inline void expect_all_near(const std::vector<float>& a, const std::vector<float>& b, double tol,
                            const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;  // also equal infinities (top-k padding)
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= tol)) {
      if (bad == 0) first = i;
      ++bad;
      worst = std::max(worst, d);
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size()
                     << " elements differ by more than " << tol << " (first at " << first << ": "
                     << a[first] << " vs " << b[first] << ", worst " << worst << ")";
}

/// One named block of the parameter layout ("layer 1 weights", ...): [offset, offset + size).
struct ParamBlock {
  std::string name;
  index_t offset = 0, size = 0;
};

/// Every layer's weight and bias block, in layout order.
inline std::vector<ParamBlock> param_blocks(const ParamLayout& layout) {
  std::vector<ParamBlock> out;
  const auto& layers = layout.layers();
  for (size_t l = 0; l < layers.size(); ++l) {
    out.push_back({"layer " + std::to_string(l) + " weights", layers[l].w_offset,
                   layers[l].in * layers[l].out});
    out.push_back({"layer " + std::to_string(l) + " bias", layers[l].b_offset, layers[l].out});
  }
  return out;
}

/// Block-wise comparison: within each block, |got - want| <= rel * max|want in the block| +
/// abs for every element.
inline void expect_blocks_near(const ParamLayout& layout, const std::vector<float>& got,
                               const std::vector<float>& want, double rel, double abs,
                               const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const ParamBlock& b : param_blocks(layout)) {
    const std::vector<float> g(got.begin() + b.offset, got.begin() + b.offset + b.size);
    const std::vector<float> w(want.begin() + b.offset, want.begin() + b.offset + b.size);
    expect_all_near(g, w, rel * max_abs(w) + abs, what + ", " + b.name);
  }
}

/// Fixture: skips the CUDA instance without a GPU (only here, in SetUp).
class DeviceParity : public ::testing::TestWithParam<DeviceId> {
 protected:
  void SetUp() override {
    const DeviceId d = GetParam();
    if (d.kind == DeviceKind::kCuda) require_cuda_devices(d.ordinal + 1);
  }
  /// The device under test for `config`.
  std::unique_ptr<Device> dut(const ModelConfig& config) const {
    return make_device(GetParam(), config);
  }
  /// The CPU reference for `config`.
  static std::unique_ptr<Device> reference(const ModelConfig& config) {
    return make_device(DeviceId::cpu(), config);
  }
  /// Parameters of a device as a vector.
  static std::vector<float> params_of(Device& d) {
    std::vector<float> p(static_cast<size_t>(d.layout().total()));
    d.read_params(p.data());
    return p;
  }
  static std::vector<float> gradient_of(Device& d) {
    std::vector<float> g(static_cast<size_t>(d.layout().total()));
    d.read_gradient(g.data());
    return g;
  }
};

/// Instantiation used by every parity test file: CPU and cuda:0, always both.
#define HETSGD_INSTANTIATE_ALL_DEVICES(suite)                                    \
  INSTANTIATE_TEST_SUITE_P(                                                      \
      AllDevices, suite,                                                         \
      ::testing::Values(::hetsgd::DeviceId::cpu(), ::hetsgd::DeviceId::cuda(0)), \
      [](const ::testing::TestParamInfo<::hetsgd::DeviceId>& i) {                \
        return i.param.kind == ::hetsgd::DeviceKind::kCpu                        \
                   ? std::string("cpu")                                          \
                   : "cuda" + std::to_string(i.param.ordinal);                   \
      })

}  // namespace hetsgd::test
