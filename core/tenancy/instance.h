/// \file core/tenancy/instance.h
/// The multi-tenant sharing model (core/tenancy/README.md): tenants with weights, device types
/// with counts, and the throughput matrix s (samples/s of tenant i's job on ONE device of type j).
///
/// Normalisation: v_ij = s_ij / max_j s_ij, so a tenant whose model is simply faster does not
/// dominate; v_ij = 1 on the tenant's best type. Utility of a bundle: u_i(x_k) = sum_j v_ij c_j
/// x_kj, measured in "best-device equivalents" of tenant i (u_i = 2 means the throughput of two of
/// i's fastest devices).
///
/// Weights: a tenant of weight w counts as w identical tenants (OEF's replication). We do not
/// literally replicate rows; every formulation uses the weighted forms of core/tenancy/README.md
/// (SI against e_i = w_i / sum w, EF as u_i(x_i)/w_i >= u_i(x_k)/w_k, Nash welfare
/// sum w_i log u_i), which coincide with replication for integer weights and extend it to
/// non-integer ones.
///
/// Validation policy for a tenant whose row is all zero (it can run on no type): an error, not a
/// silent exclusion. Such a tenant has no normalisation, would be "fair" with any share, and is
/// almost always a profiling or configuration mistake; the message tells the user to remove it.
#pragma once

#include <string>
#include <vector>

#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// One sharing problem: who shares, what is shared, and how fast each job runs where.
struct Instance {
  std::vector<std::string> tenants;  ///< n unique tenant names
  std::vector<double> weights;       ///< n weights, finite and > 0 (1 = one share)
  std::vector<std::string> types;    ///< m unique device-type names
  std::vector<int> counts;           ///< m device counts c_j >= 1
  Matrix s;                          ///< n x m throughput, samples/s on one device; >= 0
  bool emulated = false;  ///< true when s comes from emulated speed factors (reports say so)

  /// Number of tenants n.
  int num_tenants() const { return static_cast<int>(tenants.size()); }
  /// Number of device types m.
  int num_types() const { return static_cast<int>(types.size()); }
  /// Sum of the weights.
  double total_weight() const;
};

/// Checks every field; throws hetsgd::InvalidArgument naming the tenant or type and the value:
/// no tenants, no types, size mismatches, duplicate names, weight <= 0 / NaN / inf, count < 1,
/// throughput NaN / inf / negative, a tenant whose row is all zero.
void validate(const Instance& inst);

/// v_ij = s_ij / max_j s_ij (n x m). Requires a validated instance.
Matrix normalised(const Instance& inst);

/// u_i(bundle of tenant k) = sum_j v_ij c_j x_kj, in tenant i's best-device equivalents.
double utility(const Matrix& v, const std::vector<int>& counts, const Matrix& x, int i, int k);
/// u_i(x_i): tenant i's utility for its own bundle.
inline double utility(const Matrix& v, const std::vector<int>& counts, const Matrix& x, int i) {
  return utility(v, counts, x, i, i);
}

/// The weighted equal split e: x_ij = w_i / sum w for every type.
Matrix equal_split(const Instance& inst);

/// The instance restricted to the tenants whose index is in `keep` (in that order).
Instance sub_instance(const Instance& inst, const std::vector<int>& keep);

}  // namespace hetsgd::tenancy
