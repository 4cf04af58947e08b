#include "core/tenancy/properties.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/random.h"
#include "core/tenancy/allocation_lp.h"
#include "core/tenancy/lp_solver.h"

namespace hetsgd::tenancy {

std::vector<double> sharing_incentive_margins(const Instance& inst, const Matrix& x) {
  const Matrix v = normalised(inst);
  const Matrix e = equal_split(inst);
  std::vector<double> out(inst.num_tenants());
  for (int i = 0; i < inst.num_tenants(); ++i) {
    out[i] = utility(v, inst.counts, x, i) - utility(v, inst.counts, e, i);
  }
  return out;
}

std::vector<double> envy_margins(const Instance& inst, const Matrix& x) {
  const Matrix v = normalised(inst);
  const int n = inst.num_tenants();
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) {
    const double own = utility(v, inst.counts, x, i);
    double margin = own;
    for (int k = 0; k < n; ++k) {
      if (k == i) continue;
      margin = std::min(margin,
                        own - inst.weights[i] / inst.weights[k] * utility(v, inst.counts, x, i, k));
    }
    out[i] = margin;
  }
  return out;
}

double envy_freeness_margin(const Instance& inst, const Matrix& x) {
  const auto m = envy_margins(inst, x);
  return *std::min_element(m.begin(), m.end());
}

bool is_sharing_incentive(const Instance& inst, const Matrix& x, double tol) {
  for (double d : sharing_incentive_margins(inst, x)) {
    if (d < -tol) return false;
  }
  return true;
}

bool is_envy_free(const Instance& inst, const Matrix& x, double tol) {
  return envy_freeness_margin(inst, x) >= -tol;
}

ParetoCheck pareto_check(const Instance& inst, const Matrix& x, double tol) {
  const int n = inst.num_tenants(), m = inst.num_types();
  const Matrix v = normalised(inst);
  // Variables: y (the shares) and one improvement d_i >= 0 per tenant; maximise sum_i d_i.
  LpProblem lp = allocation_lp(n, m, /*extra=*/n);
  for (int i = 0; i < n; ++i) {
    lp.objective[n * m + i] = 1.0;
    // u_i(y) - d_i >= u_i(x)
    LpRow row = utility_row(v, inst.counts, i);
    row.index.push_back(n * m + i);
    row.coef.push_back(-1.0);
    lp.add_row(row.index, row.coef, utility(v, inst.counts, x, i), kLpInf);
  }
  const LpResult res = solve_lp(lp);
  ParetoCheck out;
  out.solved = res.optimal;
  if (res.optimal) {
    out.max_improvement = std::max(0.0, res.objective);
    out.efficient = out.max_improvement <= tol;
  }
  return out;
}

StrategyProbe strategy_proofness_probe(const Instance& inst, const std::string& policy, int trials,
                                       std::uint64_t seed, const PolicyOptions& options) {
  validate(inst);
  HETSGD_CHECK(trials >= 0, "strategy-proofness probe: trials " << trials << " < 0");
  const int n = inst.num_tenants(), m = inst.num_types();
  const Matrix v = normalised(inst);
  const Allocation truthful = allocate(inst, policy, options);
  StrategyProbe probe;
  SplitMix64 rng(seed);
  for (int t = 0; t < trials; ++t) {
    const int i = t % n;
    std::vector<double> row = inst.s.row(i);
    const double row_max = *std::max_element(row.begin(), row.end());
    const double kind = rng.uniform();
    if (kind < 0.4) {
      // An arbitrary row, some types declared unusable.
      for (double& r : row) r = rng.uniform() < 0.2 ? 0.0 : row_max * (0.01 + rng.uniform());
    } else if (kind < 0.8) {
      // A distortion of the truth by a factor in [e^-2, e^2] per type.
      for (double& r : row) r *= std::exp(4.0 * rng.uniform() - 2.0);
    } else {
      // Hide one type or exaggerate it to the row maximum.
      const int j = static_cast<int>(rng.uniform() * m) % m;
      row[j] = rng.uniform() < 0.5 ? 0.0 : row_max;
    }
    if (*std::max_element(row.begin(), row.end()) <= 0) row[0] = row_max;
    Instance lie = inst;
    for (int j = 0; j < m; ++j) lie.s(i, j) = row[j];
    const Allocation out = allocate(lie, policy, options);
    const double gain = utility(v, inst.counts, out.x, i) - utility(v, inst.counts, truthful.x, i);
    if (gain > probe.max_gain) {
      probe.max_gain = gain;
      probe.tenant = i;
      probe.trial = t;
      probe.misreport = row;
    }
  }
  return probe;
}

StrategyProbe structured_strategy_probe(const Instance& inst, const std::string& policy,
                                        const StructuredProbeOptions& probe,
                                        const PolicyOptions& options) {
  validate(inst);
  const int n = inst.num_tenants(), m = inst.num_types();
  const Matrix v = normalised(inst);
  const Allocation truthful = allocate(inst, policy, options);
  StrategyProbe out;
  SplitMix64 rng(probe.seed);
  // The liar's true gain for reporting `row`; rows without a positive entry are not valid reports
  // (validation refuses them), so they are skipped.
  auto gain_of = [&](int i, const std::vector<double>& row) {
    if (*std::max_element(row.begin(), row.end()) <= 0) {
      return -std::numeric_limits<double>::infinity();
    }
    Instance lie = inst;
    for (int j = 0; j < m; ++j) lie.s(i, j) = row[j];
    const Allocation a = allocate(lie, policy, options);
    ++out.trials_run;
    const double gain = utility(v, inst.counts, a.x, i) - utility(v, inst.counts, truthful.x, i);
    if (gain > out.max_gain) {
      out.max_gain = gain;
      out.tenant = i;
      out.trial = out.trials_run - 1;
      out.misreport = row;
    }
    return gain;
  };
  for (int i = 0; i < n; ++i) {
    const std::vector<double> truth = inst.s.row(i);
    std::vector<double> best_row = truth;
    double best = 0.0;
    auto consider = [&](const std::vector<double>& row) {
      const double g = gain_of(i, row);
      if (g > best) {
        best = g;
        best_row = row;
      }
    };
    for (int j = 0; j < m; ++j) {
      for (double f : probe.scales) {
        std::vector<double> row = truth;
        // Scaling a zero is no lie; an unusable type is claimed at the scaled row maximum instead.
        row[j] = row[j] > 0 ? row[j] * f : f * *std::max_element(truth.begin(), truth.end()) / 10.0;
        consider(row);
      }
      if (probe.zeros && truth[j] > 0) {
        std::vector<double> row = truth;
        row[j] = 0.0;
        consider(row);
      }
      for (int k = j + 1; probe.swaps && k < m; ++k) {
        std::vector<double> row = truth;
        std::swap(row[j], row[k]);
        if (row != truth) consider(row);
      }
    }
    for (int k = 0; probe.others_rows && k < n; ++k) {
      if (k != i && inst.s.row(k) != truth) consider(inst.s.row(k));
    }
    for (int step = 0; step < probe.local_search_steps; ++step) {
      std::vector<double> row = best_row;
      const int j = static_cast<int>(rng() % static_cast<std::uint64_t>(m));
      const double row_max = *std::max_element(row.begin(), row.end());
      row[j] = row[j] > 0 ? row[j] * std::exp(3.0 * rng.uniform() - 1.5) : row_max * rng.uniform();
      consider(row);
    }
  }
  return out;
}

}  // namespace hetsgd::tenancy
