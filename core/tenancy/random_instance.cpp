#include "core/tenancy/random_instance.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/random.h"

namespace hetsgd::tenancy {

Instance random_instance(std::uint64_t seed, const RandomInstanceOptions& options) {
  SplitMix64 rng(seed);
  auto pick = [&](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const int n =
      pick(std::max(1, options.min_tenants), std::max(options.min_tenants, options.max_tenants));
  const int m = pick(1, std::max(1, options.max_types));
  Instance inst;
  for (int j = 0; j < m; ++j) {
    inst.types.push_back("type" + std::to_string(j));
    const int count = pick(1, std::max(1, options.max_count));
    inst.counts.push_back(options.family == RandomFamily::kSingleDevices ? 1 : count);
  }
  // Each type has a base speed; each tenant a speedup per type of up to 8x either way, so
  // tenants disagree about which type is best (the interesting case for OEF).
  std::vector<double> base(m);
  for (int j = 0; j < m; ++j) base[j] = 100.0 * std::exp(2.0 * rng.uniform());
  inst.s = Matrix(n, m);
  const double kWeights[] = {1.0, 2.0, 0.5, 1.5};
  for (int i = 0; i < n; ++i) {
    inst.tenants.push_back("t" + std::to_string(i));
    inst.weights.push_back(options.weights ? kWeights[rng() % 4] : 1.0);
    for (int j = 0; j < m; ++j) {
      const bool zero = rng.uniform() < options.zero_probability;
      inst.s(i, j) = zero ? 0.0 : base[j] * std::exp(4.0 * rng.uniform() - 2.0);
    }
    if (options.family == RandomFamily::kIdenticalRows && i > 0) {
      for (int j = 0; j < m; ++j) inst.s(i, j) = inst.s(0, j);
    } else if (options.family == RandomFamily::kSpecialists && rng.uniform() < 0.5) {
      const int only = pick(0, m - 1);
      for (int j = 0; j < m; ++j) {
        if (j != only) inst.s(i, j) = 0.0;
      }
      if (inst.s(i, only) <= 0) inst.s(i, only) = base[only];
    } else if (options.family == RandomFamily::kExtremeSpeeds) {
      const int fast = pick(0, m - 1);
      inst.s(i, fast) = 1000.0 * std::max(inst.s(i, fast), base[fast]);
    }
    double row_max = 0;
    for (int j = 0; j < m; ++j) row_max = std::max(row_max, inst.s(i, j));
    if (row_max <= 0) inst.s(i, pick(0, m - 1)) = base[0];
  }
  validate(inst);
  return inst;
}

std::vector<Instance> random_suite(int count, std::uint64_t seed) {
  const RandomFamily families[] = {RandomFamily::kGeneric, RandomFamily::kIdenticalRows,
                                   RandomFamily::kSpecialists, RandomFamily::kSingleDevices,
                                   RandomFamily::kExtremeSpeeds};
  std::vector<Instance> out;
  for (int k = 0; k < count; ++k) {
    RandomInstanceOptions o;
    o.min_tenants = 2;
    o.max_tenants = 5;
    o.max_types = 4;
    o.weights = false;
    o.family = families[k % 5];
    Instance inst = random_instance(seed + static_cast<std::uint64_t>(k), o);
    // m is drawn in [1, 4]; the suite wants at least two types, so redraw one-type instances.
    for (std::uint64_t retry = 1; inst.num_types() < 2; ++retry) {
      inst = random_instance(
          (seed + static_cast<std::uint64_t>(k)) ^ (retry * 0x9E3779B97F4A7C15ULL), o);
    }
    out.push_back(std::move(inst));
  }
  return out;
}

}  // namespace hetsgd::tenancy
