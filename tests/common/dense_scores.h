/// \file tests/common/dense_scores.h
/// An expert's sparse scores (core/label_scores.h) laid out in full, for tests that compare
/// them label by label.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "core/label_scores.h"

namespace hetsgd::test {

/// rows x L scores: each listed label's, every other label `floor[l]` (0 where `floor` is
/// empty). A row that lists a label twice fails the calling test.
inline std::vector<float> dense_scores(const LabelScoreRows& rows, index_t L,
                                       const std::vector<float>& floor = {}) {
  const auto n = static_cast<size_t>(L);
  std::vector<float> s;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t l = 0; l < n; ++l) s.push_back(floor.empty() ? 0.0f : floor[l]);
  }
  std::vector<char> listed(s.size(), 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (const LabelScore& e : rows[r]) {
      const size_t i = r * n + static_cast<size_t>(e.label);
      EXPECT_FALSE(listed[i]) << "row " << r << " lists label " << e.label << " twice";
      listed[i] = 1;
      s[i] = e.score;
    }
  }
  return s;
}

}  // namespace hetsgd::test
