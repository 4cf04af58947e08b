#include "core/tenancy/allocation_lp.h"

namespace hetsgd::tenancy {

LpProblem allocation_lp(int n, int m, int extra) {
  LpProblem lp;
  lp.num_vars = n * m + extra;
  lp.objective.assign(lp.num_vars, 0.0);
  lp.col_upper.assign(lp.num_vars, kLpInf);
  for (int k = 0; k < n * m; ++k) lp.col_upper[k] = 1.0;
  for (int j = 0; j < m; ++j) {
    std::vector<int> idx;
    for (int i = 0; i < n; ++i) idx.push_back(i * m + j);
    lp.add_row(idx, std::vector<double>(n, 1.0), -kLpInf, 1.0);
  }
  return lp;
}

LpRow utility_row(const Matrix& v, const std::vector<int>& counts, int i) {
  LpRow row;
  const int m = v.cols;
  for (int j = 0; j < m; ++j) {
    row.index.push_back(i * m + j);
    row.coef.push_back(v(i, j) * counts[j]);
  }
  return row;
}

}  // namespace hetsgd::tenancy
