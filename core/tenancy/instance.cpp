#include "core/tenancy/instance.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace hetsgd::tenancy {

double Instance::total_weight() const {
  double w = 0;
  for (double x : weights) w += x;
  return w;
}

void validate(const Instance& inst) {
  const int n = inst.num_tenants();
  const int m = inst.num_types();
  HETSGD_CHECK(n > 0, "sharing instance has no tenants");
  HETSGD_CHECK(m > 0, "sharing instance has no device types (no devices to share)");
  HETSGD_CHECK(static_cast<int>(inst.weights.size()) == n,
               "sharing instance: " << inst.weights.size() << " weights for " << n << " tenants");
  HETSGD_CHECK(
      static_cast<int>(inst.counts.size()) == m,
      "sharing instance: " << inst.counts.size() << " device counts for " << m << " device types");
  HETSGD_CHECK(
      inst.s.rows == n && inst.s.cols == m && inst.s.data.size() == static_cast<std::size_t>(n) * m,
      "sharing instance: throughput matrix is " << inst.s.rows << " x " << inst.s.cols
                                                << ", expected " << n << " x " << m
                                                << " (tenants x types)");
  std::set<std::string> seen;
  for (const auto& t : inst.tenants) {
    HETSGD_CHECK(!t.empty(), "sharing instance: a tenant has an empty name");
    HETSGD_CHECK(seen.insert(t).second, "sharing instance: tenant '" << t << "' appears twice");
  }
  seen.clear();
  for (const auto& t : inst.types) {
    HETSGD_CHECK(!t.empty(), "sharing instance: a device type has an empty name");
    HETSGD_CHECK(seen.insert(t).second,
                 "sharing instance: device type '" << t << "' appears twice");
  }
  for (int i = 0; i < n; ++i) {
    const double w = inst.weights[i];
    HETSGD_CHECK(std::isfinite(w) && w > 0,
                 "tenant '" << inst.tenants[i] << "': weight " << w << " must be finite and > 0");
  }
  for (int j = 0; j < m; ++j) {
    HETSGD_CHECK(inst.counts[j] >= 1, "device type '" << inst.types[j] << "': count "
                                                      << inst.counts[j] << " must be >= 1");
  }
  // An all-zero row is refused rather than dropped: it has no normalisation and would be
  // "fair" with any share (instance.h), so it is almost always a profiling mistake.
  for (int i = 0; i < n; ++i) {
    double row_max = 0;
    for (int j = 0; j < m; ++j) {
      const double v = inst.s(i, j);
      HETSGD_CHECK(std::isfinite(v), "tenant '" << inst.tenants[i] << "', type '" << inst.types[j]
                                                << "': throughput " << v << " is not finite");
      HETSGD_CHECK(v >= 0, "tenant '" << inst.tenants[i] << "', type '" << inst.types[j]
                                      << "': throughput " << v << " is negative");
      row_max = std::max(row_max, v);
    }
    HETSGD_CHECK(row_max > 0, "tenant '" << inst.tenants[i]
                                         << "': throughput is 0 on every device type (its job can "
                                            "run nowhere); remove the tenant or fix its profile");
  }
}

// Each row over its best type: a tenant whose model is simply faster does not dominate, and
// every policy is invariant to scaling a row (core/tenancy/README.md).
Matrix normalised(const Instance& inst) {
  Matrix v(inst.num_tenants(), inst.num_types());
  for (int i = 0; i < v.rows; ++i) {
    double row_max = 0;
    for (int j = 0; j < v.cols; ++j) row_max = std::max(row_max, inst.s(i, j));
    for (int j = 0; j < v.cols; ++j) v(i, j) = row_max > 0 ? inst.s(i, j) / row_max : 0.0;
  }
  return v;
}

double utility(const Matrix& v, const std::vector<int>& counts, const Matrix& x, int i, int k) {
  double u = 0;
  for (int j = 0; j < v.cols; ++j) u += v(i, j) * counts[j] * x(k, j);
  return u;
}

Matrix equal_split(const Instance& inst) {
  Matrix x(inst.num_tenants(), inst.num_types());
  const double total = inst.total_weight();
  for (int i = 0; i < x.rows; ++i) {
    for (int j = 0; j < x.cols; ++j) x(i, j) = inst.weights[i] / total;
  }
  return x;
}

Instance sub_instance(const Instance& inst, const std::vector<int>& keep) {
  // Only the tenants change: the kept ones share the same device types and counts.
  Instance out;
  out.types = inst.types;
  out.counts = inst.counts;
  out.emulated = inst.emulated;
  out.s = Matrix(static_cast<int>(keep.size()), inst.num_types());
  for (std::size_t r = 0; r < keep.size(); ++r) {
    const int i = keep[r];
    HETSGD_CHECK(i >= 0 && i < inst.num_tenants(),
                 "tenant index " << i << " outside [0, " << inst.num_tenants() << ")");
    out.tenants.push_back(inst.tenants[i]);
    out.weights.push_back(inst.weights[i]);
    for (int j = 0; j < inst.num_types(); ++j) out.s(static_cast<int>(r), j) = inst.s(i, j);
  }
  return out;
}

}  // namespace hetsgd::tenancy
