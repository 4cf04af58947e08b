/// \file core/tenancy/random_instance.h
/// Deterministic random sharing instances, for property tests, probes and benchmarks of the
/// policies. Shapes follow the sharing problems the library is built for: a handful of tenants
/// and device types, per-type speedups that differ between tenants, occasional zeros (a job
/// that does not fit a type), optional non-integer weights.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tenancy/instance.h"

namespace hetsgd::tenancy {

/// Shape families of random_instance(): the generic draw, and degenerate cases on which sharing
/// mechanisms tend to break.
enum class RandomFamily {
  kGeneric,        ///< independent per-type speedups (below)
  kIdenticalRows,  ///< every tenant has tenant 0's row (nothing to gain by trading)
  kSpecialists,    ///< about half the tenants can run on one type only
  kSingleDevices,  ///< every type has one device
  kExtremeSpeeds,  ///< each tenant has one type 1000x faster than its others
};

/// Knobs of random_instance().
struct RandomInstanceOptions {
  int max_tenants = 5;             ///< n drawn uniformly in [1, max_tenants] (min 2 if min_tenants)
  int min_tenants = 1;             ///< lower end of n
  int max_types = 4;               ///< m drawn uniformly in [1, max_types]
  int max_count = 4;               ///< c_j drawn uniformly in [1, max_count]
  double zero_probability = 0.15;  ///< chance that s_ij = 0 (the row keeps one positive entry)
  bool weights = true;             ///< draw weights in {1, 2, 0.5, 1.5} instead of all 1
  RandomFamily family = RandomFamily::kGeneric;  ///< shape family
};

/// A validated random instance, a pure function of `seed` and `options`.
Instance random_instance(std::uint64_t seed, const RandomInstanceOptions& options = {});

/// The random suite the policies are measured on: `count` unit-weight instances with 2-5 tenants
/// and 2-4 types, cycling through the five families (generic, identical rows, specialists,
/// single devices, extreme speeds), instance k drawn from seed `seed + k`.
std::vector<Instance> random_suite(int count, std::uint64_t seed = 1);

}  // namespace hetsgd::tenancy
