#include "core/tenancy/random_instance.h"

#include <algorithm>
#include <cmath>
#include <string>

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
    inst.counts.push_back(pick(1, std::max(1, options.max_count)));
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
    double row_max = 0;
    for (int j = 0; j < m; ++j) row_max = std::max(row_max, inst.s(i, j));
    if (row_max <= 0) inst.s(i, pick(0, m - 1)) = base[0];
  }
  return inst;
}

}  // namespace hetsgd::tenancy
