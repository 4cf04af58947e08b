// The baseline sharing policies: equal split, Gavel's max-min LP, and the Nash (Eisenberg-Gale)
// allocation. See allocation.h for their definitions and the fallback policy.
#include <algorithm>

#include "core/tenancy/allocation.h"
#include "core/tenancy/allocation_lp.h"
#include "core/tenancy/lp_solver.h"
#include "core/tenancy/nash_solver.h"

namespace hetsgd::tenancy {
namespace {

Allocation equal_fallback(const Instance& inst, const std::string& policy, const std::string& why) {
  Allocation a;
  a.policy = policy;
  a.x = allocate_equal(inst).x;
  a.fallback = true;
  a.note = why + "; fell back to the equal split";
  return a;
}

// Column sums may exceed 1 by the solver's tolerance and entries may be -1e-12; clamp so the
// enforcement and property code sees a feasible matrix.
void clamp_feasible(Matrix* x) {
  for (double& v : x->data) v = std::clamp(v, 0.0, 1.0);
  for (int j = 0; j < x->cols; ++j) {
    double sum = 0;
    for (int i = 0; i < x->rows; ++i) sum += (*x)(i, j);
    if (sum > 1.0) {
      for (int i = 0; i < x->rows; ++i) (*x)(i, j) /= sum;
    }
  }
}

}  // namespace

Allocation allocate_equal(const Instance& inst) {
  Allocation a;
  a.policy = "equal";
  const int n = inst.num_tenants(), m = inst.num_types();
  a.x = Matrix(n, m);
  // The weight a tenant would have on a type it cannot run on goes to those that can: nothing
  // is handed to a job that would leave it idle, and SP/EF/SI still hold (a report only decides
  // which types count as usable).
  for (int j = 0; j < m; ++j) {
    double usable_weight = 0;
    for (int i = 0; i < n; ++i) {
      if (inst.s(i, j) > 0) usable_weight += inst.weights[i];
    }
    for (int i = 0; i < n; ++i) {
      if (inst.s(i, j) > 0) a.x(i, j) = inst.weights[i] / usable_weight;
    }
  }
  a.strategy_proof = true;
  return a;
}

Allocation allocate_gavel(const Instance& inst) {
  const int n = inst.num_tenants(), m = inst.num_types();
  const Matrix v = normalised(inst);
  const Matrix e = equal_split(inst);
  const int t_var = n * m;
  LpProblem lp = allocation_lp(n, m, /*extra=*/1);
  lp.objective[t_var] = 1.0;
  std::vector<int> fair_rows;
  for (int i = 0; i < n; ++i) {
    // u_i(x) - t * u_i(e_i) >= 0
    LpRow row = utility_row(v, inst.counts, i);
    row.index.push_back(t_var);
    row.coef.push_back(-utility(v, inst.counts, e, i));
    fair_rows.push_back(lp.add_row(row.index, row.coef, 0.0, kLpInf));
  }
  const LpResult first = solve_lp(lp);
  if (!first.optimal) return equal_fallback(inst, "gavel", "max-min LP " + first.message);
  // Second stage: the max-min optimum is rarely unique; among the allocations reaching it, take
  // the one with the highest total utility (a relative slack of 1e-9 keeps the LP feasible).
  const double t_star = first.x[t_var];
  lp.col_lower.assign(lp.num_vars, 0.0);
  lp.col_lower[t_var] = t_star * (1.0 - 1e-9);
  lp.col_upper[t_var] = t_star * (1.0 - 1e-9);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) lp.objective[i * m + j] = v(i, j) * inst.counts[j];
  }
  lp.objective[t_var] = 0.0;
  const LpResult second = solve_lp(lp);
  Allocation a;
  a.policy = "gavel";
  a.x = Matrix(n, m);
  const std::vector<double>& sol = second.optimal ? second.x : first.x;
  for (int k = 0; k < n * m; ++k) a.x.data[k] = sol[k];
  if (!second.optimal)
    a.note = "total-utility tie-break LP " + second.message + "; max-min solution kept";
  clamp_feasible(&a.x);
  return a;
}

Allocation allocate_nash(const Instance& inst) {
  const Matrix v = normalised(inst);
  if (inst.num_tenants() == 1) {
    // A lone tenant's optimum is every type it can use; the claimant terms of oef-noncoop ask for
    // it often enough that skipping the interior-point solve matters.
    Allocation out;
    out.policy = "nash";
    out.x = Matrix(1, inst.num_types());
    for (int j = 0; j < inst.num_types(); ++j) out.x(0, j) = v(0, j) > 0 ? 1.0 : 0.0;
    return out;
  }
  Matrix a(v.rows, v.cols);
  for (int i = 0; i < v.rows; ++i) {
    for (int j = 0; j < v.cols; ++j) a(i, j) = v(i, j) * inst.counts[j];
  }
  NashSolution sol = solve_eisenberg_gale(a, inst.weights);
  if (!sol.converged) return equal_fallback(inst, "nash", "Eisenberg-Gale solver did not converge");
  Allocation out;
  out.policy = "nash";
  out.x = sol.x;
  clamp_feasible(&out.x);
  return out;
}

}  // namespace hetsgd::tenancy
