// The OEF-style policies: the cooperative envy-free LP, the non-cooperative rotating-claimant
// mechanism and the Partial Allocation mechanism it is built from. See allocation.h for the
// formulations and what they guarantee.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/tenancy/allocation.h"
#include "core/tenancy/allocation_lp.h"
#include "core/tenancy/lp_solver.h"

namespace hetsgd::tenancy {
namespace {

// Scales every type's column up so that what is held covers the whole type (NOT strategy-proof:
// a tenant's report then moves the others' leftovers into its own bundle).
void redistribute_pro_rata(Matrix* x) {
  for (int j = 0; j < x->cols; ++j) {
    double held = 0;
    for (int i = 0; i < x->rows; ++i) held += (*x)(i, j);
    if (held <= 0) continue;
    for (int i = 0; i < x->rows; ++i) (*x)(i, j) /= held;
  }
}

}  // namespace

Allocation allocate_oef_coop(const Instance& inst) {
  const int n = inst.num_tenants(), m = inst.num_types();
  const Matrix v = normalised(inst);
  const Matrix e = equal_split(inst);
  LpProblem lp = allocation_lp(n, m);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) lp.objective[i * m + j] = v(i, j) * inst.counts[j];
  }
  for (int i = 0; i < n; ++i) {
    // SI: u_i(x_i) >= u_i(e_i). Implied by EF when every device is allocated, but devices nobody
    // can use may stay idle, so the rows stay.
    LpRow si = utility_row(v, inst.counts, i);
    lp.add_row(si.index, si.coef, utility(v, inst.counts, e, i), kLpInf);
    // Weighted EF, multiplied through by w_i: u_i(x_i) - (w_i / w_k) u_i(x_k) >= 0.
    for (int k = 0; k < n; ++k) {
      if (k == i) continue;
      std::vector<int> eidx;
      std::vector<double> ecoef;
      const double ratio = inst.weights[i] / inst.weights[k];
      for (int j = 0; j < m; ++j) {
        const double c = v(i, j) * inst.counts[j];
        eidx.push_back(i * m + j);
        ecoef.push_back(c);
        eidx.push_back(k * m + j);
        ecoef.push_back(-ratio * c);
      }
      lp.add_row(eidx, ecoef, 0.0, kLpInf);
    }
  }
  const LpResult res = solve_lp(lp);
  Allocation a;
  a.policy = "oef-coop";
  if (!res.optimal) {
    // The equal split is always feasible for this LP, so this branch means a solver failure.
    a.x = allocate_equal(inst).x;
    a.fallback = true;
    a.note = "EF/SI LP " + res.message + "; fell back to the equal split";
    return a;
  }
  a.x = Matrix(n, m);
  for (int k = 0; k < n * m; ++k) a.x.data[k] = std::clamp(res.x[k], 0.0, 1.0);
  a.note = "maximises total utility among envy-free allocations; not always Pareto-efficient";
  return a;
}

std::vector<double> partial_allocation_factors(const Instance& inst) {
  const Allocation full = allocate_nash(inst);
  HETSGD_CHECK(!full.fallback, "Partial Allocation: " << full.note);
  return partial_allocation_factors_given(inst, full.x);
}

std::vector<double> partial_allocation_factors_given(const Instance& inst, const Matrix& nash_x) {
  const int n = inst.num_tenants();
  const Matrix v = normalised(inst);
  std::vector<double> f(n, 1.0);
  if (n == 1) return f;
  for (int i = 0; i < n; ++i) {
    std::vector<int> keep;
    for (int k = 0; k < n; ++k) {
      if (k != i) keep.push_back(k);
    }
    const Instance without = sub_instance(inst, keep);
    const Allocation rest = allocate_nash(without);
    HETSGD_CHECK(!rest.fallback,
                 "Partial Allocation without tenant '" << inst.tenants[i] << "': " << rest.note);
    // Row normalisation is per tenant, so tenant k's v row is the same in both instances.
    double log_ratio = 0;
    for (std::size_t r = 0; r < keep.size(); ++r) {
      const int k = keep[r];
      const double with_i = utility(v, inst.counts, nash_x, k);
      double without_i = 0;
      for (int j = 0; j < v.cols; ++j) {
        without_i += v(k, j) * inst.counts[j] * rest.x(static_cast<int>(r), j);
      }
      log_ratio += inst.weights[k] * (std::log(with_i) - std::log(without_i));
    }
    // f_i <= 1 holds exactly (x*^{-i} is optimal without i); clamp the solver's last digits.
    f[i] = std::min(1.0, std::exp(log_ratio / inst.weights[i]));
  }
  return f;
}

Allocation allocate_partial_allocation(const Instance& inst, bool redistribute) {
  const int n = inst.num_tenants(), m = inst.num_types();
  Allocation a;
  a.policy = redistribute ? "partial-allocation+redistribute" : "partial-allocation";
  const Allocation nash = allocate_nash(inst);
  if (nash.fallback) {
    a.x = nash.x;
    a.fallback = true;
    a.note = nash.note;
    return a;
  }
  std::vector<double> f;
  try {
    f = partial_allocation_factors_given(inst, nash.x);
  } catch (const InvalidArgument& err) {
    a.x = allocate_equal(inst).x;
    a.fallback = true;
    a.note = std::string(err.what()) + "; fell back to the equal split";
    return a;
  }
  a.x = Matrix(n, m);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) a.x(i, j) = f[i] * nash.x(i, j);
  }
  if (!redistribute) {
    a.strategy_proof = true;
    a.note = "Partial Allocation: the unassigned remainder stays idle to keep strategy-proofness";
    return a;
  }
  redistribute_pro_rata(&a.x);
  a.note = "Partial Allocation with the remainder redistributed pro rata: NOT strategy-proof";
  return a;
}

Matrix claimant_allocation(const Instance& inst, int claimant) {
  const int n = inst.num_tenants(), m = inst.num_types();
  HETSGD_CHECK(claimant >= 0 && claimant < n,
               "claimant " << claimant << " outside [0, " << n << ")");
  Matrix x(n, m);
  std::vector<int> others;
  for (int k = 0; k < n; ++k) {
    if (k != claimant) others.push_back(k);
  }
  std::vector<double> used(m, 0.0);
  if (!others.empty()) {
    const Allocation pa = allocate_partial_allocation(sub_instance(inst, others));
    HETSGD_CHECK(!pa.fallback, "Partial Allocation without tenant '" << inst.tenants[claimant]
                                                                     << "': " << pa.note);
    for (std::size_t r = 0; r < others.size(); ++r) {
      for (int j = 0; j < m; ++j) {
        x(others[r], j) = pa.x(static_cast<int>(r), j);
        used[j] += pa.x(static_cast<int>(r), j);
      }
    }
  }
  for (int j = 0; j < m; ++j) {
    if (inst.s(claimant, j) > 0) x(claimant, j) = std::max(0.0, 1.0 - used[j]);
  }
  return x;
}

Matrix identical_job_terms(const std::vector<double>& weights) {
  const int n = static_cast<int>(weights.size());
  Matrix t(n, n);
  for (int c = 0; c < n; ++c) {
    double others = 0, held = 0;
    for (int k = 0; k < n; ++k) others += k == c ? 0.0 : weights[k];
    for (int i = 0; i < n; ++i) {
      if (i == c) continue;
      // Identical linear utilities: the weighted Nash split is w_i / W_S, and without i every
      // other tenant's utility grows by W_S / (W_S - w_i), so the Partial Allocation factor is
      // f_i = ((W_S - w_i) / W_S)^((W_S - w_i) / w_i) (1 for a lone tenant).
      const double rest = others - weights[i];
      const double f = n == 2 ? 1.0 : std::pow(rest / others, rest / weights[i]);
      t(i, c) = f * weights[i] / others;
      held += t(i, c);
    }
    t(c, c) = std::max(0.0, 1.0 - held);
  }
  return t;
}

std::vector<double> claimant_probabilities(const std::vector<double>& weights,
                                           std::string* lp_note) {
  const int n = static_cast<int>(weights.size());
  HETSGD_CHECK(n >= 1, "claimant odds of no tenant");
  if (n == 1) return {1.0};
  // Equal weights: exactly 1/n, without the LP's last digits.
  if (std::all_of(weights.begin(), weights.end(), [&](double w) { return w == weights[0]; })) {
    return std::vector<double>(n, 1.0 / n);
  }
  double total = 0;
  for (double w : weights) total += w;
  // Calibrated on identical jobs, where "a tenant of weight w counts as w tenants" has one
  // meaning, the split w_i / W: odds p >= 0 maximising min_i share_i / (w_i / W). Two tenants
  // get exactly w_i / W; unit weights get 1/n. Variables p_0 .. p_{n-1}, then t.
  const Matrix term = identical_job_terms(weights);
  LpProblem lp;
  lp.num_vars = n + 1;
  lp.objective.assign(n + 1, 0.0);
  lp.objective[n] = 1.0;
  lp.col_lower.assign(n + 1, 0.0);
  lp.col_upper.assign(n + 1, 1.0);
  lp.col_upper[n] = kLpInf;
  std::vector<int> all(n);
  for (int c = 0; c < n; ++c) all[c] = c;
  lp.add_row(all, std::vector<double>(n, 1.0), 1.0, 1.0);
  for (int i = 0; i < n; ++i) {
    std::vector<int> index = all;
    std::vector<double> coef = term.row(i);
    index.push_back(n);
    coef.push_back(-weights[i] / total);
    lp.add_row(index, coef, 0.0, kLpInf);
  }
  const LpResult res = solve_lp(lp);
  // Uniform odds are as strategy-proof as any other: the fallback keeps the guarantee, and the
  // caller's note says that the weights were not honoured.
  if (!res.optimal) {
    if (lp_note != nullptr) *lp_note = "claimant-odds LP " + res.message + "; uniform odds used";
    return std::vector<double>(n, 1.0 / n);
  }
  std::vector<double> p(res.x.begin(), res.x.begin() + n);
  double sum = 0;
  for (double& q : p) sum += (q = std::max(0.0, q));
  for (double& q : p) q /= sum;
  return p;
}

Allocation allocate_oef_noncoop(const Instance& inst, bool redistribute) {
  const int n = inst.num_tenants(), m = inst.num_types();
  Allocation a;
  a.policy = redistribute ? "oef-noncoop+redistribute" : "oef-noncoop";
  a.x = Matrix(n, m);
  std::string fallback_note;
  try {
    // The claimant odds depend on the weights only, never on a report: that is what keeps the
    // average strategy-proof.
    std::string odds_note;
    const std::vector<double> p = claimant_probabilities(inst.weights, &odds_note);
    if (!odds_note.empty()) {
      a.fallback = true;
      fallback_note = odds_note + " (weights ignored)";
    }
    for (int c = 0; c < n; ++c) {
      const Matrix term = claimant_allocation(inst, c);
      for (std::size_t k = 0; k < a.x.data.size(); ++k) a.x.data[k] += p[c] * term.data[k];
    }
  } catch (const InvalidArgument& err) {
    a.x = allocate_equal(inst).x;
    a.fallback = true;
    a.note = std::string(err.what()) + "; fell back to the equal split";
    return a;
  }
  for (double& v : a.x.data) v = std::clamp(v, 0.0, 1.0);
  if (!redistribute) {
    a.strategy_proof = true;
    a.note =
        "Partial Allocation with a rotating claimant: each tenant in turn (odds set by the "
        "weights) takes what Partial Allocation among the others leaves";
  } else {
    redistribute_pro_rata(&a.x);
    a.note =
        "rotating-claimant Partial Allocation with the remainder redistributed: NOT "
        "strategy-proof";
  }
  if (!fallback_note.empty()) a.note += "; " + fallback_note;
  return a;
}

}  // namespace hetsgd::tenancy
