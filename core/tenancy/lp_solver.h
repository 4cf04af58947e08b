/// \file core/tenancy/lp_solver.h
/// A tiny linear-program front end over COIN-OR Clp (ClpSimplex), so that the sharing policies
/// state their LPs as rows of coefficients and never see a Clp type. Problems here have at most
/// a few dozen variables and a few dozen rows.
///
/// Failure is a result, not an exception: solve_lp() reports whether Clp proved optimality, and
/// each caller decides its documented fallback (the policies fall back to the equal split and
/// flag it). Thread-safe: every call builds its own ClpSimplex.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace hetsgd::tenancy {

/// +infinity for unbounded row or column sides.
inline constexpr double kLpInf = std::numeric_limits<double>::infinity();

/// One linear constraint `lower <= sum_k coef[k] * x[index[k]] <= upper`.
struct LpRow {
  std::vector<int> index;    ///< variable indices
  std::vector<double> coef;  ///< coefficients, same length as index
  double lower = -kLpInf;    ///< lower side (-inf for none)
  double upper = kLpInf;     ///< upper side (+inf for none)
};

/// `maximise (or minimise) objective . x` subject to rows and column bounds.
struct LpProblem {
  int num_vars = 0;               ///< number of variables
  std::vector<double> objective;  ///< num_vars coefficients
  std::vector<double> col_lower;  ///< num_vars lower bounds (default 0 when empty)
  std::vector<double> col_upper;  ///< num_vars upper bounds (default +inf when empty)
  std::vector<LpRow> rows;        ///< constraints
  bool maximise = true;           ///< direction

  /// Adds a constraint row and returns its index.
  int add_row(std::vector<int> index, std::vector<double> coef, double lower, double upper) {
    rows.push_back(LpRow{std::move(index), std::move(coef), lower, upper});
    return static_cast<int>(rows.size()) - 1;
  }
};

/// Outcome of solve_lp().
struct LpResult {
  bool optimal = false;    ///< Clp proved optimality
  int status = -1;         ///< Clp status: 0 optimal, 1 infeasible, 2 unbounded, 3+ other
  std::string message;     ///< human-readable status ("optimal", "primal infeasible", ...)
  double objective = 0.0;  ///< objective value (valid when optimal)
  std::vector<double> x;   ///< num_vars values (valid when optimal)
};

/// Solves `lp` with Clp's dual simplex (primal tolerance 1e-9, logging off). Never throws for
/// solver outcomes; throws hetsgd::InvalidArgument for malformed input (sizes, indices).
LpResult solve_lp(const LpProblem& lp);

}  // namespace hetsgd::tenancy
