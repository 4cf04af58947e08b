// ShortlistConfig::max_positives in the loss: the positives a step leaves out of a row
// (CandidateSet::label_used; which ones: cpu_shortlist_select_test.cpp) are neither targets
// nor negatives of that row in shortlist_loss_grad.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/random.h"
#include "kernels/cpu/output_layer.h"

namespace hetsgd::cpu {
namespace {

// A left-out positive of one row may still be a candidate (another row's positive, a draw):
// its logit must then neither count as a target nor as a negative of that row. So the step
// equals one whose batch lacks that label in that row and whose candidates lack it entirely,
// with a zero gradient row for it.
class LeftOutPositive : public ::testing::TestWithParam<Loss> {};

TEST_P(LeftOutPositive, EqualsTheStepWithoutItAndGetsNoGradient) {
  constexpr index_t kHidden = 6, kLabels = 9, kRows = 3;
  SplitMix64 rng(17);
  std::vector<float> w(kLabels * kHidden), bias(kLabels), h(kRows * kHidden);
  for (float& v : w) v = rng.uniform() - 0.5f;
  for (float& v : bias) v = 0.3f * (rng.uniform() - 0.5f);
  for (float& v : h) v = rng.uniform();
  // Row 0: labels {1, 4, 6}, of which 4 is left out; row 1: {4}; row 2: {7}.
  CsrBatch with;
  with.num_features = 1;
  with.num_labels = kLabels;
  with.x_indptr = {0, 0, 0, 0};
  with.y_indptr = {0, 3, 4, 5};
  with.y_indices = {1, 4, 6, 4, 7};
  CandidateSet cand;
  for (col_t j = 0; j < kLabels; ++j) cand.ids.push_back(j);
  cand.weight.assign(kLabels, 1.0f);
  cand.label_slot = {1, 4, 6, 4, 7};
  cand.label_used = {1, 0, 1, 1, 1};
  // Reference: row 0 without label 4 and, for row 0 alone, no candidate 4. Rows are
  // independent, so it is computed as two batches: row 0 over the candidates without 4, rows
  // 1 and 2 over all of them.
  CsrBatch row0;
  row0.num_features = 1;
  row0.num_labels = kLabels;
  row0.x_indptr = {0, 0};
  row0.y_indptr = {0, 2};
  row0.y_indices = {1, 6};
  CandidateSet cand0;
  cand0.ids = {0, 1, 2, 3, 5, 6, 7, 8};
  cand0.weight.assign(cand0.ids.size(), 1.0f);
  cand0.label_slot = {1, 5};
  CsrBatch rows12;
  rows12.num_features = 1;
  rows12.num_labels = kLabels;
  rows12.x_indptr = {0, 0, 0};
  rows12.y_indptr = {0, 1, 2};
  rows12.y_indices = {4, 7};
  CandidateSet cand12 = cand;
  cand12.label_slot = {4, 7};
  cand12.label_used.clear();

  const Loss loss = GetParam();
  const float scale = 1.0f;
  OutputWorkspace ws, ws0, ws12;
  std::vector<float> dh(kRows * kHidden), dh0(kHidden), dh12(2 * kHidden);
  const float l = shortlist_loss_grad(with, h.data(), kHidden, w.data(), bias.data(), kLabels, loss,
                                      scale, cand, dh.data(), &ws);
  // The mean over rows (softmax) or over rows x L (BCE) is undone by each call's row count.
  const float l0 = shortlist_loss_grad(row0, h.data(), kHidden, w.data(), bias.data(), kLabels,
                                       loss, scale, cand0, dh0.data(), &ws0);
  const float l12 = shortlist_loss_grad(rows12, h.data() + kHidden, kHidden, w.data(), bias.data(),
                                        kLabels, loss, scale, cand12, dh12.data(), &ws12);
  EXPECT_NEAR(l * 3.0f, l0 * 1.0f + l12 * 2.0f, 1e-4f);
  for (index_t i = 0; i < kHidden; ++i) {
    EXPECT_NEAR(dh[i] * 3.0f, dh0[i], 1e-5f) << i;
    for (index_t r = 1; r < kRows; ++r) {
      EXPECT_NEAR(dh[r * kHidden + i] * 3.0f, dh12[(r - 1) * kHidden + i] * 2.0f, 1e-5f);
    }
  }
  // Candidate rows: the sum of the two references' (row 0 has none for label 4).
  for (col_t j = 0; j < kLabels; ++j) {
    const auto at0 = static_cast<index_t>(j < 4 ? j : j - 1);
    for (index_t i = 0; i <= kHidden; ++i) {
      const float got = i < kHidden ? ws.dw[j * kHidden + i] : ws.db[j];
      float want = 2.0f * (i < kHidden ? ws12.dw[j * kHidden + i] : ws12.db[j]);
      if (j != 4) want += i < kHidden ? ws0.dw[at0 * kHidden + i] : ws0.db[at0];
      EXPECT_NEAR(got * 3.0f, want, 1e-5f) << "label " << j << " entry " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Losses, LeftOutPositive, ::testing::Values(Loss::kSoftmax, Loss::kBce),
                         [](const auto& info) {
                           return std::string(info.param == Loss::kSoftmax ? "Softmax" : "Bce");
                         });

}  // namespace
}  // namespace hetsgd::cpu
