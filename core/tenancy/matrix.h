/// \file core/tenancy/matrix.h
/// A small dense row-major matrix of doubles: throughput matrices and allocations (tenants x
/// device types). Sizes in this module are tiny (a handful of tenants and types), so clarity
/// wins over speed; nothing here is meant for model parameters.
#pragma once

#include <cstddef>
#include <vector>

namespace hetsgd::tenancy {

/// Dense row-major `rows x cols` matrix of doubles, zero-initialised.
struct Matrix {
  int rows = 0;              ///< number of rows (tenants)
  int cols = 0;              ///< number of columns (device types)
  std::vector<double> data;  ///< rows*cols values, row-major

  Matrix() = default;
  /// A `rows x cols` matrix filled with `value`.
  Matrix(int r, int c, double value = 0.0)
      : rows(r), cols(c), data(static_cast<std::size_t>(r) * static_cast<std::size_t>(c), value) {}
  /// Builds from nested rows; every row must have the same length (checked by Instance
  /// validation, not here: ragged input yields a matrix whose `cols` is the first row's size).
  static Matrix from_rows(const std::vector<std::vector<double>>& r) {
    Matrix m(static_cast<int>(r.size()), r.empty() ? 0 : static_cast<int>(r[0].size()));
    for (int i = 0; i < m.rows; ++i) {
      for (int j = 0; j < m.cols && j < static_cast<int>(r[i].size()); ++j) m(i, j) = r[i][j];
    }
    return m;
  }

  /// Element access (no bounds check).
  double& operator()(int i, int j) { return data[static_cast<std::size_t>(i) * cols + j]; }
  /// Element access (no bounds check).
  double operator()(int i, int j) const { return data[static_cast<std::size_t>(i) * cols + j]; }
  /// Row `i` as a vector copy.
  std::vector<double> row(int i) const {
    return std::vector<double>(data.begin() + static_cast<std::ptrdiff_t>(i) * cols,
                               data.begin() + static_cast<std::ptrdiff_t>(i + 1) * cols);
  }
};

}  // namespace hetsgd::tenancy
