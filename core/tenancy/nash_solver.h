/// \file core/tenancy/nash_solver.h
/// The weighted Eisenberg-Gale program (the `nash` policy, core/tenancy/README.md):
///
///     maximise  sum_i w_i log u_i(x),   u_i(x) = sum_j a_ij x_ij,
///     subject to sum_i x_ij <= 1,  x_ij >= 0,
///
/// whose optimum is the competitive equilibrium from equal (weighted) incomes: Pareto-efficient,
/// envy-free (weighted) and sharing-incentive. Solved by a primal log-barrier interior-point
/// method with exact Newton steps (variables are at most tenants x types, a few dozen), driven to
/// a barrier parameter of 1e-16 times sum w. Utilities are then accurate to about 1e-7 relative
/// even in degenerate markets (a buyer indifferent between goods at equilibrium prices, where
/// the central path approaches the optimum like sqrt(mu)), and to ~1e-12 otherwise. This
/// matters: Partial Allocation divides Nash welfares, and the property checks use 1e-6.
#pragma once

#include <vector>

#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// Outcome of solve_eisenberg_gale().
struct NashSolution {
  Matrix x;                     ///< n x m fractions; x_ij = 0 where a_ij = 0
  std::vector<double> utility;  ///< u_i(x) = sum_j a_ij x_ij
  int newton_steps = 0;         ///< total Newton iterations (diagnostics)
  bool converged = false;       ///< reached the final barrier parameter
};

/// Solves the weighted Eisenberg-Gale program for `a` (n x m, a_ij >= 0; every row needs a
/// positive entry) and weights `w` (n values > 0). Throws hetsgd::InvalidArgument on a row
/// without a positive entry or mismatched sizes. Never fails silently: `converged` is false if
/// the Newton iterations hit their cap (callers treat that as a solver failure).
NashSolution solve_eisenberg_gale(const Matrix& a, const std::vector<double>& w);

}  // namespace hetsgd::tenancy
