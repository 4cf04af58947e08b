/// \file core/tenancy/share_report.h
/// The report of `hetsgd share` (core/tenancy/README.md): per tenant its share, normalised and
/// absolute throughput, envy and sharing-incentive margins; per policy the totals and the Pareto
/// check; side by side for every policy. Printed as a table or written as JSON (read by
/// tools/plot_shares.py).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tenancy/allocation.h"
#include "core/tenancy/instance.h"
#include "core/tenancy/properties.h"
#include "core/tenancy/share_runner.h"

namespace hetsgd::tenancy {

/// One tenant under one policy.
struct TenantShareReport {
  std::string name;            ///< tenant name
  double weight = 1.0;         ///< its weight
  std::vector<double> share;   ///< x_ij per type (fraction of the type's devices)
  double utility = 0.0;        ///< u_i(x_i), best-device equivalents
  double utility_equal = 0.0;  ///< u_i(e_i) under the weighted equal split
  double throughput = 0.0;     ///< sum_j s_ij c_j x_ij, samples/s
  double envy_margin = 0.0;    ///< min_k u_i(x_i) - (w_i/w_k) u_i(x_k); >= 0: envies nobody
  double si_margin = 0.0;      ///< u_i(x_i) - u_i(e_i); >= 0: better than the equal split
};

/// One policy on one instance.
struct PolicyReport {
  std::string policy;                      ///< policy name (as in Allocation::policy)
  bool fallback = false;                   ///< solver failed; equal split used
  bool strategy_proof = false;             ///< SP by construction
  std::string note;                        ///< caveats from the policy
  std::vector<TenantShareReport> tenants;  ///< in instance order
  std::vector<double> unassigned;          ///< per type: 1 - sum_i x_ij (idle fraction)
  double total_utility = 0.0;              ///< sum_i u_i
  double total_throughput = 0.0;           ///< sum_i throughput, samples/s
  double envy_margin = 0.0;                ///< min over tenants
  double si_margin = 0.0;                  ///< min over tenants
  bool envy_free = false;                  ///< envy_margin >= -tol
  bool sharing_incentive = false;          ///< si_margin >= -tol
  ParetoCheck pareto;                      ///< Pareto-efficiency LP
  Matrix x;                                ///< the allocation itself
};

/// Several policies on one instance.
struct ShareReport {
  Instance instance;                   ///< the instance (emulated flag included)
  std::vector<PolicyReport> policies;  ///< in the order requested
};

/// Runs `policy` on `inst` and measures everything in PolicyReport (tolerance kPropertyTol).
PolicyReport evaluate_policy(const Instance& inst, const std::string& policy,
                             const PolicyOptions& options = {});
/// evaluate_policy() for each name in `policies` (default: every registered policy).
ShareReport compare_policies(const Instance& inst,
                             const std::vector<std::string>& policies = policy_names(),
                             const PolicyOptions& options = {});

/// Prints one block per policy: a row per tenant and a total row (fixed-width text).
void print_share_table(const ShareReport& report, std::ostream& os);
/// The report as JSON: {"emulated", "types", "counts", "tenants", "weights", "throughput",
/// "policies": [{"policy", "shares": [[...]], "tenants": [...], "total_throughput", ...}]}.
nlohmann::json share_report_json(const ShareReport& report);
/// Writes share_report_json() to `path` (pretty-printed); throws IoError naming the path.
void write_share_json(const ShareReport& report, const std::string& path);

/// A tenant's state at the end of a run: "failed", "finished", "departed", "present" or
/// "never arrived" (the first that applies).
const char* tenant_status(const EnforcementResult& result, int tenant);

/// An enforcement run as JSON: {"policy", "rounds", "round_seconds", "max_lag", "moves",
/// "recomputes", "tenants": [{"name", "status" (tenant_status()), "departed_round",
/// "finished_round", "failed_round" (-1 = none), "failure" (the failed job's error, or ""),
/// "rounds_present", "samples", "updates", "train_seconds", "x", "target", "realised",
/// "bound" (1 / (c_j rounds_present) per type)}], "events": [{"round", "kind", "tenant", "text"}],
/// "round_log": [{"round", "moves", "present", "held", "target", "average_target", "realised"},
/// n x m rows each], "throughput_estimate": the tracker's final n x m estimate}. `inst` is the
/// instance the run used.
nlohmann::json enforcement_json(const EnforcementResult& result, const Instance& inst,
                                double round_seconds);

}  // namespace hetsgd::tenancy
