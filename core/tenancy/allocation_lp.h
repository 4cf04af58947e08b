/// \file core/tenancy/allocation_lp.h
/// The common skeleton of every allocation LP (oef-coop, gavel, the Pareto check).
///
/// Variables 0 .. n*m-1 are the shares x_ij, at index i*m + j, bounded to [0, 1]; further
/// variables, if any, follow them with bounds [0, +inf). Every such LP holds the capacity rows
/// sum_i x_ij <= 1, and expresses utilities u_i(x) = sum_j v_ij c_j x_ij as row coefficients.
#pragma once

#include <vector>

#include "core/tenancy/lp_solver.h"
#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// An LP over n*m share variables plus `extra` variables, zero objective, maximising, with one
/// capacity row per type j: sum_i x_ij <= 1.
LpProblem allocation_lp(int n, int m, int extra = 0);

/// Tenant i's utility u_i(x) = sum_j v_ij c_j x_ij over the share variables, as a row whose
/// sides are left open (-inf, +inf): callers append terms and set the sides.
LpRow utility_row(const Matrix& v, const std::vector<int>& counts, int i);

}  // namespace hetsgd::tenancy
