/// \file core/tenancy/properties.h
/// Checks of the fairness and efficiency properties of an allocation (core/tenancy/README.md), as
/// library functions the tests and the `share` report call.
///
/// Units: margins are in the judging tenant's best-device equivalents (the units of u_i, see
/// instance.h); a property holds when its margin is >= -tol. The default tolerance 1e-6 sits
/// well above the LP solver's feasibility tolerance (1e-9) and far below any meaningful share
/// (a millionth of one device).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tenancy/allocation.h"
#include "core/tenancy/instance.h"
#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// Default absolute tolerance of the property checks, in best-device equivalents.
inline constexpr double kPropertyTol = 1e-6;

/// Per tenant: u_i(x_i) - u_i(e_i), e_i the weighted equal split. SI holds when all >= -tol.
std::vector<double> sharing_incentive_margins(const Instance& inst, const Matrix& x);

/// Per tenant i: min over k != i of u_i(x_i) - (w_i / w_k) u_i(x_k), i.e. how much i prefers its
/// own bundle to any other (weight-scaled) bundle. With one tenant there is nobody to envy and
/// the margin is u_i(x_i) (the comparison with an empty bundle). EF holds when all >= -tol.
std::vector<double> envy_margins(const Instance& inst, const Matrix& x);

/// min over tenants of envy_margins().
double envy_freeness_margin(const Instance& inst, const Matrix& x);

/// True when every SI margin is >= -tol.
bool is_sharing_incentive(const Instance& inst, const Matrix& x, double tol = kPropertyTol);
/// True when every envy margin is >= -tol.
bool is_envy_free(const Instance& inst, const Matrix& x, double tol = kPropertyTol);

/// Result of pareto_check().
struct ParetoCheck {
  bool solved = false;           ///< the LP was solved (false: unknown; `efficient` is false)
  double max_improvement = 0.0;  ///< optimum of the LP below (sum of utility gains)
  bool efficient = false;        ///< solved and max_improvement <= tol
};

/// Pareto efficiency: solves `max sum_i d_i s.t. u_i(y) >= u_i(x) + d_i, d_i >= 0, y feasible`
/// with Clp. The optimum is 0 exactly when no allocation makes someone better off without
/// making anyone worse off.
ParetoCheck pareto_check(const Instance& inst, const Matrix& x, double tol = kPropertyTol);

/// Result of strategy_proofness_probe().
struct StrategyProbe {
  double max_gain = 0.0;          ///< max over trials of the true-utility gain of lying
  int tenant = -1;                ///< the tenant achieving it (-1 when no trial gained)
  int trial = -1;                 ///< its trial index
  std::vector<double> misreport;  ///< the reported throughput row achieving it
  int trials_run = 0;             ///< misreports evaluated
};

/// Empirical strategy-proofness probe: for `trials` trials (tenant t mod n lies in trial t),
/// draws a misreported throughput row from `seed` (uniform random rows with zeros, random
/// multiplicative distortions of the true row, or one type hidden or exaggerated), runs
/// `policy` on the misreported instance, and measures the liar's TRUE utility gain over the
/// truthful outcome. A strategy-proof mechanism gives max_gain <= tol (solver noise only).
/// Deterministic for a given seed.
StrategyProbe strategy_proofness_probe(const Instance& inst, const std::string& policy, int trials,
                                       std::uint64_t seed, const PolicyOptions& options = {});

}  // namespace hetsgd::tenancy

namespace hetsgd::tenancy {

/// What structured_strategy_probe() tries for every tenant.
struct StructuredProbeOptions {
  std::vector<double> scales = {0.1, 0.3, 0.5, 2.0, 3.0, 10.0};  ///< single entries scaled by
  bool zeros = true;           ///< each positive entry declared 0 (the row keeps one positive)
  bool swaps = true;           ///< each pair of entries exchanged
  bool others_rows = true;     ///< another tenant's row declared as one's own
  int local_search_steps = 8;  ///< hill-climbing steps (random entry times e^[-1.5, 1.5]) from
                               ///< the best misreport found, per tenant
  std::uint64_t seed = 1;      ///< draws of the local search
};

/// Structured strategy-proofness probe: for every tenant i, runs `policy` on the instance with
/// i's row replaced by each structured misreport (options above) and measures i's TRUE utility
/// gain over the truthful outcome; then hill-climbs from the best one. max_gain <= tol (solver
/// noise only) for a strategy-proof mechanism. Deterministic for given options.
StrategyProbe structured_strategy_probe(const Instance& inst, const std::string& policy,
                                        const StructuredProbeOptions& probe = {},
                                        const PolicyOptions& options = {});

}  // namespace hetsgd::tenancy
