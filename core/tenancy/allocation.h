/// \file core/tenancy/allocation.h
/// Sharing policies (core/tenancy/README.md): each maps an Instance to fractional shares
/// x_ij (the fraction of type j's devices that tenant i holds over time), and a registry that
/// selects one by name.
///
/// The OEF paper (Mo, Xu, Lau, Middleware 2024) was not available to us beyond its claims; the
/// `oef-coop` and `oef-noncoop` policies implement the properties it claims with the
/// formulations of core/tenancy/README.md, not the paper's own algorithms:
///  - `oef-coop`: LP  max sum_i u_i(x)  s.t.  weighted EF for all pairs, SI for all i, capacity.
///    Optimal among envy-free allocations; not always Pareto-efficient overall (reported).
///  - `oef-noncoop`: Partial Allocation with a rotating claimant. For each tenant c (the
///    claimant), run Partial Allocation (below) on the other tenants with all devices; c gets
///    everything they leave of the types it declares usable. x is the average of these n
///    allocations with claimant odds p_c (claimant_probabilities(): they depend on the weights
///    only, calibrated so that identical jobs get w_i / W as nearly as the mechanism allows;
///    the claimant rotates over enforcement time, the average is what it delivers). Unit
///    weights give p_c = 1/n; two tenants get each usable type in the ratio of their weights.
///    Strategy-proof, with any weights: the claimant's bundle does not depend on its own report
///    beyond which types it declares usable (declaring a useless type gains nothing, hiding a
///    usable one loses its leftovers), the others get Partial Allocation without c, which is
///    strategy-proof, the odds depend on the weights only, and an average of strategy-proof
///    mechanisms is strategy-proof (utilities are linear in x).
///    n <= 2 (any weights): it is the usable-type weighted split of `equal`, so weighted EF and
///    weighted SI hold as well. n >= 3, unit weights: u_i >= u_i(e_i) / e and
///    u_i >= ((n-1)/n) (1/e) u_i(nash): in each of the n-1 terms where i is not the claimant,
///    Partial Allocation gives i at least 1/e of its Nash utility among the other n-1 tenants,
///    which is at least its utility for 1/(n-1) of every type (CEEI is SI) and at least its Nash
///    utility with everyone (removing a buyer from a linear Fisher market never lowers the
///    others' equilibrium utilities). n >= 3 with unequal weights: only SP is guaranteed (a
///    heavy tenant's bundle is below its weighted equal split whenever Partial Allocation
///    withholds much). Never guaranteed for n >= 3: EF, SI, PE.
///  - `partial-allocation`: the Partial Allocation mechanism (Cole, Gkatzelis, Goel, EC 2013) over
///    the weighted Nash-welfare allocation x*: tenant i keeps f_i x*_i with
///    f_i = ( prod_{k != i} (u_k(x*) / u_k(x*^{-i}))^{w_k} )^{1 / w_i},
///    x*^{-i} the Nash allocation without i (for unit weights exactly Cole et al.'s factor; the
///    exponents keep strategy-proofness with weights: f_i^{w_i} u_i^{w_i} is the weighted Nash
///    welfare divided by a term i cannot influence). Strategy-proof; with unit weights also
///    envy-free (tested); with unequal weights weighted EF is NOT guaranteed (it fails on about
///    half of our random weighted instances), only SP and f_i <= 1. Each tenant gets at least 1/e
///    of its Nash utility. The rest stays UNASSIGNED (idle) because handing it out would break
///    strategy-proofness.
///  - The `redistribute` option (oef-noncoop and partial-allocation) hands each type's leftover to
///    its holders pro rata; it is NOT strategy-proof and the allocation's policy name and note
///    say so.
///  - Baselines: `equal` (each type split by weight among the tenants that can use it: a tenant
///    never holds a type it cannot run on; SP, EF and SI, since a report only says which types
///    are usable), `gavel` (Gavel's max-min of u_i / u_i(e_i);
///    ties broken by a second LP maximising total utility at the max-min level), `nash`
///    (weighted Eisenberg-Gale, see nash_solver.h).
///
/// Failure policy: an LP or interior-point solve that does not report optimality never
/// crashes: the policy returns the weighted equal split with `fallback = true` and the solver's
/// message in `note` (the equal split satisfies SI and EF, so fairness is kept; efficiency is
/// lost and reported).
#pragma once

#include <string>
#include <vector>

#include "core/tenancy/instance.h"
#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// A policy's answer for one instance.
struct Allocation {
  std::string policy;           ///< policy name as registered (plus "+redistribute" when used)
  Matrix x;                     ///< n x m fractions in [0, 1]; column sums <= 1
  bool fallback = false;        ///< the solver failed and the equal split was returned instead
  bool strategy_proof = false;  ///< the mechanism is strategy-proof by construction
  std::string note;             ///< solver message, fallback reason or caveat ("" when none)
};

/// Options that change a policy's behaviour.
struct PolicyOptions {
  /// oef-noncoop only: hand the unassigned part of each type to the tenants holding it, pro rata.
  /// Higher throughput, but NOT strategy-proof.
  bool redistribute = false;
};

/// Runs policy `policy` (one of policy_names()) on a validated copy of `inst`. Throws
/// hetsgd::InvalidArgument for an unknown name (listing the known ones) or an invalid instance.
Allocation allocate(const Instance& inst, const std::string& policy,
                    const PolicyOptions& options = {});

/// The registered policy names: oef-coop, oef-noncoop, partial-allocation, gavel, nash, equal.
std::vector<std::string> policy_names();

/// `equal`: x_ij = w_i / (sum of w_k over tenants k with s_kj > 0) where s_ij > 0, else 0.
Allocation allocate_equal(const Instance& inst);
/// `gavel`: max t s.t. u_i(x) >= t u_i(e_i), capacity; then max sum_i u_i at that t.
Allocation allocate_gavel(const Instance& inst);
/// `nash`: weighted Eisenberg-Gale (competitive equilibrium from equal incomes).
Allocation allocate_nash(const Instance& inst);
/// `oef-coop`: max sum_i u_i s.t. weighted EF, SI, capacity.
Allocation allocate_oef_coop(const Instance& inst);
/// `oef-noncoop`: Partial Allocation with a rotating claimant (optionally redistributed).
Allocation allocate_oef_noncoop(const Instance& inst, bool redistribute = false);
/// `partial-allocation`: Partial Allocation over the Nash allocation (optionally redistributed).
Allocation allocate_partial_allocation(const Instance& inst, bool redistribute = false);

/// One term of `oef-noncoop`: tenant `claimant` takes what Partial Allocation among the others
/// leaves of the types it declares usable (s_cj > 0); the others hold their Partial Allocation
/// bundles. n x m, column sums <= 1. Throws InvalidArgument when a Nash solve fails.
Matrix claimant_allocation(const Instance& inst, int claimant);

/// The claimant odds of `oef-noncoop` for these weights (1 for a lone tenant): on identical
/// jobs, the odds p >= 0 that bring every tenant's share closest to its weighted split w_i / W
/// (max-min of share_i / (w_i / W), a small LP). Exact for two tenants (p_c = w_other / W) and
/// for unit weights (1/n). They sum to 1 and depend on nothing a tenant reports.
/// When the LP is not solved to optimality the odds are uniform and `lp_note` (if given) says
/// why.
std::vector<double> claimant_probabilities(const std::vector<double>& weights,
                                           std::string* lp_note = nullptr);
/// On identical jobs with these weights (any one type), the share of tenant i when c claims:
/// column c of the result is claimant_allocation()'s term (diagnostics and tests).
Matrix identical_job_terms(const std::vector<double>& weights);

/// The Partial Allocation factors f_i in (0, 1] for `inst` (diagnostics and tests).
std::vector<double> partial_allocation_factors(const Instance& inst);
/// The same factors from an already solved Nash allocation `nash_x` of `inst` (n x m).
std::vector<double> partial_allocation_factors_given(const Instance& inst, const Matrix& nash_x);

}  // namespace hetsgd::tenancy
