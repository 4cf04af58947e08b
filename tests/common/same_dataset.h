/// \file tests/common/same_dataset.h
/// Field-by-field equality of two data sets, for round-trip tests.
#pragma once

#include <gtest/gtest.h>

#include <tuple>

#include "core/dataset.h"

namespace hetsgd::test {

/// `a` and `b` have the same shape and the same rows, values compared exactly (writers emit
/// round-trip float text or the bytes themselves).
inline void expect_same_dataset(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(std::tie(a.num_features, a.num_labels), std::tie(b.num_features, b.num_labels))
      << "shape";
  EXPECT_EQ(std::tie(a.x_indptr, a.x_indices, a.x_values),
            std::tie(b.x_indptr, b.x_indices, b.x_values))
      << "features";
  EXPECT_EQ(std::tie(a.y_indptr, a.y_indices), std::tie(b.y_indptr, b.y_indices)) << "labels";
}

}  // namespace hetsgd::test
