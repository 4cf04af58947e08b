// The output layer at the label count of Amazon-670K against a float64 reference computed
// here: loss and gradient of every block (gradient()), and the chunked loss and top-k of
// predict_topk(). On CUDA at L = 670,091 (the scale where float sums over all labels and the
// chunked scoring could go wrong); the CPU instance runs the same reference at L = 20,011,
// so the reference itself is checked on every machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tests/backend/parity_fixture.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 670091;
constexpr index_t kAmazonLabels = 670091;
constexpr index_t kCpuLabels = 20011;
constexpr index_t kRows = 32;  // on CUDA: 2 score chunks of at most 16 Mi logits
/// float against float64: sums over L terms (softmax) and over the batch, a few 1e-6 relative
/// on a model of this size; 1e-4 leaves room for the order of those sums.
constexpr double kRefLossTol = 1e-4;
constexpr double kRefGradTol = 1e-4;  // of each block's largest element
constexpr double kRefScoreTol = 1e-4;

// Rows of 6-14 features and 1-3 labels spread over all of [0, L), the last label included.
CsrBatch spread_batch(index_t num_features, index_t num_labels) {
  CsrBatch b;
  b.num_features = num_features;
  b.num_labels = num_labels;
  for (index_t r = 0; r < kRows; ++r) {
    const int nf = 6 + static_cast<int>(uniform01(kSeed, 3 * r) * 9.0f);
    std::vector<col_t> fs;
    for (int i = 0; i < nf; ++i) {
      fs.push_back(static_cast<col_t>(uniform01(kSeed + 1, r * 64 + i) * num_features));
    }
    std::sort(fs.begin(), fs.end());
    fs.erase(std::unique(fs.begin(), fs.end()), fs.end());
    for (size_t i = 0; i < fs.size(); ++i) {
      b.x_indices.push_back(fs[i]);
      b.x_values.push_back(0.25f + uniform01(kSeed + 2, r * 64 + i));
    }
    b.x_indptr.push_back(static_cast<index_t>(b.x_indices.size()));
    const int ny = 1 + static_cast<int>(uniform01(kSeed, 3 * r + 1) * 3.0f);
    for (int i = 0; i < ny; ++i) {
      const col_t y = r == 0 && i == 0
                          ? static_cast<col_t>(num_labels - 1)
                          : static_cast<col_t>(uniform01(kSeed + 3, r * 8 + i) * num_labels);
      b.y_indices.push_back(y);
    }
    b.y_indptr.push_back(static_cast<index_t>(b.y_indices.size()));
  }
  return b;
}

// Loss, gradient and logits of the one-hidden-layer model in double.
struct Reference {
  double loss = 0.0;
  std::vector<double> grad;    // layout order
  std::vector<double> logits;  // rows x L
};

Reference reference_of(const ModelConfig& c, const ParamLayout& layout, const std::vector<float>& p,
                       const CsrBatch& b) {
  const LayerSlice& l0 = layout.layers()[0];
  const LayerSlice& l1 = layout.layers()[1];
  const index_t h = l0.out, n = c.num_labels, rows = b.rows();
  Reference ref;
  ref.grad.assign(p.size(), 0.0);
  std::vector<double> hid(static_cast<size_t>(rows * h));
  for (index_t r = 0; r < rows; ++r) {
    for (index_t j = 0; j < h; ++j) {
      double s = p[l0.b_offset + j];
      for (index_t e = b.x_indptr[r]; e < b.x_indptr[r + 1]; ++e) {
        s += double{b.x_values[e]} * p[l0.w_offset + b.x_indices[e] * h + j];
      }
      hid[r * h + j] = std::max(s, 0.0);
    }
  }
  ref.logits.assign(static_cast<size_t>(rows * n), 0.0);
  for (index_t r = 0; r < rows; ++r) {
    double* z = ref.logits.data() + r * n;
    for (index_t y = 0; y < n; ++y) z[y] = p[l1.b_offset + y];
    // The output layer is stored by label: label y's weights are row y of [n x h].
    for (index_t y = 0; y < n; ++y) {
      const float* w = p.data() + l1.w_offset + y * h;
      for (index_t j = 0; j < h; ++j) z[y] += hid[r * h + j] * w[j];
    }
  }
  std::vector<double> dz(static_cast<size_t>(n)), dh(static_cast<size_t>(h));
  for (index_t r = 0; r < rows; ++r) {
    const double* z = ref.logits.data() + r * n;
    const index_t ny = b.y_indptr[r + 1] - b.y_indptr[r];
    const double m = *std::max_element(z, z + n);
    double s = 0.0;
    for (index_t y = 0; y < n; ++y) s += std::exp(z[y] - m);
    double label_mean = 0.0;
    for (index_t e = b.y_indptr[r]; e < b.y_indptr[r + 1]; ++e) label_mean += z[b.y_indices[e]];
    label_mean /= static_cast<double>(ny);
    ref.loss += std::log(s) + m - label_mean;
    for (index_t y = 0; y < n; ++y) dz[y] = std::exp(z[y] - m) / s / rows;
    for (index_t e = b.y_indptr[r]; e < b.y_indptr[r + 1]; ++e) {
      dz[b.y_indices[e]] -= 1.0 / static_cast<double>(ny) / rows;
    }
    for (index_t j = 0; j < h; ++j) {
      const double a = hid[r * h + j];
      double back = 0.0;
      for (index_t y = 0; y < n; ++y) {
        ref.grad[l1.w_offset + y * h + j] += a * dz[y];
        back += dz[y] * p[l1.w_offset + y * h + j];
      }
      dh[j] = a > 0.0 ? back : 0.0;
    }
    for (index_t y = 0; y < n; ++y) ref.grad[l1.b_offset + y] += dz[y];
    for (index_t j = 0; j < h; ++j) {
      ref.grad[l0.b_offset + j] += dh[j];
      for (index_t e = b.x_indptr[r]; e < b.x_indptr[r + 1]; ++e) {
        ref.grad[l0.w_offset + b.x_indices[e] * h + j] += double{b.x_values[e]} * dh[j];
      }
    }
  }
  ref.loss /= static_cast<double>(rows);
  return ref;
}

class LargeLabelReference : public DeviceParity {
 protected:
  index_t labels() const {
    return GetParam().kind == DeviceKind::kCuda ? kAmazonLabels : kCpuLabels;
  }
};

TEST_P(LargeLabelReference, LossGradientAndTopkMatchFloat64) {
  SCOPED_TRACE("seed " + std::to_string(kSeed) + ", L " + std::to_string(labels()));
  ModelConfig c = test::fixed_model();
  c.num_features = 300;
  c.num_labels = labels();
  c.hidden = {16};
  c.optimizer.kind = OptimizerKind::kSgd;
  c.seed = kSeed;
  auto d = dut(c);
  const std::vector<float> p = params_of(*d);
  const CsrBatch b = spread_batch(c.num_features, c.num_labels);
  const Reference ref = reference_of(c, d->layout(), p, b);

  const float loss = d->gradient(b, 1.0f);
  EXPECT_NEAR(loss, ref.loss, kRefLossTol * std::fabs(ref.loss));
  const std::vector<float> g = gradient_of(*d);
  const std::vector<float> want(ref.grad.begin(), ref.grad.end());
  expect_blocks_near(d->layout(), g, want, kRefGradTol, 0.0, "gradient vs float64");

  const int k = 5;
  std::vector<col_t> ids(static_cast<size_t>(kRows * k));
  std::vector<float> scores(ids.size());
  const float eval_loss = d->predict_topk(b, k, ids.data(), scores.data());
  EXPECT_NEAR(eval_loss, ref.loss, kRefLossTol * std::fabs(ref.loss)) << "chunked scoring loss";
  for (index_t r = 0; r < kRows; ++r) {
    const double* z = ref.logits.data() + r * c.num_labels;
    std::vector<index_t> order(static_cast<size_t>(c.num_labels));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(
        order.begin(), order.begin() + k + 1, order.end(),
        [z](index_t a, index_t bb) { return z[a] > z[bb] || (z[a] == z[bb] && a < bb); });
    for (int i = 0; i < k; ++i) {
      const double want_score = z[order[i]];
      const float got = scores[r * k + i];
      EXPECT_NEAR(got, want_score, kRefScoreTol * (1.0 + std::fabs(want_score)))
          << "row " << r << " rank " << i;
      // Ids must agree wherever float rounding cannot swap two ranks.
      const double gap_above = i == 0 ? 1.0 : z[order[i - 1]] - want_score;
      const double gap_below = want_score - z[order[i + 1]];
      if (std::min(gap_above, gap_below) > 10 * kRefScoreTol * (1.0 + std::fabs(want_score))) {
        EXPECT_EQ(ids[r * k + i], order[i]) << "row " << r << " rank " << i;
      }
    }
  }
}

HETSGD_INSTANTIATE_ALL_DEVICES(LargeLabelReference);

}  // namespace
}  // namespace hetsgd::test
