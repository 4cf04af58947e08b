#include "core/tenancy/lp_solver.h"

#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>

#include <cmath>

#include "core/error.h"

namespace hetsgd::tenancy {
namespace {

// Clp represents infinity as COIN_DBL_MAX; translate ours.
double to_clp(double v) {
  if (v == kLpInf) return COIN_DBL_MAX;
  if (v == -kLpInf) return -COIN_DBL_MAX;
  return v;
}

}  // namespace

LpResult solve_lp(const LpProblem& lp) {
  const int n = lp.num_vars;
  HETSGD_CHECK(n > 0, "LP has " << n << " variables");
  HETSGD_CHECK(
      static_cast<int>(lp.objective.size()) == n,
      "LP objective has " << lp.objective.size() << " coefficients for " << n << " variables");
  std::vector<int> row_idx, col_idx;
  std::vector<double> elems;
  std::vector<double> row_lo, row_up;
  for (std::size_t r = 0; r < lp.rows.size(); ++r) {
    const LpRow& row = lp.rows[r];
    HETSGD_CHECK(row.index.size() == row.coef.size(), "LP row " << r << ": " << row.index.size()
                                                                << " indices vs " << row.coef.size()
                                                                << " coefficients");
    for (std::size_t k = 0; k < row.index.size(); ++k) {
      HETSGD_CHECK(row.index[k] >= 0 && row.index[k] < n,
                   "LP row " << r << ": variable " << row.index[k] << " outside [0, " << n << ")");
      if (row.coef[k] == 0.0) continue;
      row_idx.push_back(static_cast<int>(r));
      col_idx.push_back(row.index[k]);
      elems.push_back(row.coef[k]);
    }
    row_lo.push_back(to_clp(row.lower));
    row_up.push_back(to_clp(row.upper));
  }
  std::vector<double> col_lo(n, 0.0), col_up(n, COIN_DBL_MAX);
  if (!lp.col_lower.empty()) {
    HETSGD_CHECK(static_cast<int>(lp.col_lower.size()) == n, "LP column lower bounds size");
    for (int k = 0; k < n; ++k) col_lo[k] = to_clp(lp.col_lower[k]);
  }
  if (!lp.col_upper.empty()) {
    HETSGD_CHECK(static_cast<int>(lp.col_upper.size()) == n, "LP column upper bounds size");
    for (int k = 0; k < n; ++k) col_up[k] = to_clp(lp.col_upper[k]);
  }
  // A row-ordered matrix needs to know every column even when some have no entry, hence the
  // explicit major/minor dimensions after construction.
  CoinPackedMatrix matrix(false, row_idx.data(), col_idx.data(), elems.data(),
                          static_cast<CoinBigIndex>(elems.size()));
  matrix.setDimensions(static_cast<int>(lp.rows.size()), n);

  ClpSimplex model;
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.loadProblem(matrix, col_lo.data(), col_up.data(), lp.objective.data(), row_lo.data(),
                    row_up.data());
  model.setOptimizationDirection(lp.maximise ? -1.0 : 1.0);
  // Fairness constraints are compared with a 1e-6 tolerance by the property checks; keep the
  // solver's own feasibility slack well below that.
  model.setPrimalTolerance(1e-9);
  model.setDualTolerance(1e-9);
  model.dual();

  LpResult res;
  res.status = model.status();
  if (model.isProvenOptimal()) {
    res.optimal = true;
    res.message = "optimal";
    res.objective = model.objectiveValue();
    const double* sol = model.primalColumnSolution();
    res.x.assign(sol, sol + n);
  } else if (model.isProvenPrimalInfeasible()) {
    res.message = "primal infeasible";
  } else if (model.isProvenDualInfeasible()) {
    res.message = "unbounded";
  } else {
    res.message = "not solved (Clp status " + std::to_string(res.status) + ", secondary " +
                  std::to_string(model.secondaryStatus()) + ")";
  }
  return res;
}

}  // namespace hetsgd::tenancy
