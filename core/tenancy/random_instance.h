/// \file core/tenancy/random_instance.h
/// Deterministic random sharing instances, for property tests, probes and benchmarks of the
/// policies. Shapes follow the sharing problems the library is built for: a handful of tenants
/// and device types, per-type speedups that differ between tenants, occasional zeros (a job
/// that does not fit a type), optional non-integer weights.
#pragma once

#include <cstdint>

#include "core/tenancy/instance.h"

namespace hetsgd::tenancy {

/// Knobs of random_instance().
struct RandomInstanceOptions {
  int max_tenants = 5;             ///< n drawn uniformly in [1, max_tenants] (min 2 if min_tenants)
  int min_tenants = 1;             ///< lower end of n
  int max_types = 4;               ///< m drawn uniformly in [1, max_types]
  int max_count = 4;               ///< c_j drawn uniformly in [1, max_count]
  double zero_probability = 0.15;  ///< chance that s_ij = 0 (the row keeps one positive entry)
  bool weights = true;             ///< draw weights in {1, 2, 0.5, 1.5} instead of all 1
};

/// A validated random instance, a pure function of `seed` and `options`.
Instance random_instance(std::uint64_t seed, const RandomInstanceOptions& options = {});

}  // namespace hetsgd::tenancy
