// The strategy-proof policies (oef-noncoop = rotating-claimant Partial Allocation, equal):
// efficiency on the random suite, the structured strategy-proofness probe, the guarantees of
// allocation.h and the facts the claimant construction rests on.
#include <gtest/gtest.h>

#include <cmath>

#include "core/tenancy/allocation.h"
#include "core/tenancy/properties.h"
#include "core/tenancy/random_instance.h"

namespace hetsgd::tenancy {
namespace {

double total_utility(const Instance& inst, const Matrix& x) {
  const Matrix v = normalised(inst);
  double t = 0;
  for (int i = 0; i < inst.num_tenants(); ++i) t += utility(v, inst.counts, x, i);
  return t;
}

void expect_feasible(const Matrix& x) {
  for (double v : x.data) EXPECT_GE(v, 0.0);
  for (int j = 0; j < x.cols; ++j) {
    double col = 0;
    for (int i = 0; i < x.rows; ++i) col += x(i, j);
    EXPECT_LE(col, 1.0 + 1e-9) << "type " << j;
  }
}

TEST(TenancyNoncoop, ReachesEightyPercentOfCoopOnTheRandomSuite) {
  const std::vector<Instance> suite = random_suite(250);
  double noncoop = 0, partial = 0, worst = 1;
  for (const Instance& inst : suite) {
    const double coop = total_utility(inst, allocate(inst, "oef-coop").x);
    const Allocation a = allocate(inst, "oef-noncoop");
    ASSERT_FALSE(a.fallback) << a.note;
    EXPECT_TRUE(a.strategy_proof);
    expect_feasible(a.x);
    const double r = total_utility(inst, a.x) / coop;
    noncoop += r;
    worst = std::min(worst, r);
    partial += total_utility(inst, allocate(inst, "partial-allocation").x) / coop;
  }
  noncoop /= static_cast<double>(suite.size());
  partial /= static_cast<double>(suite.size());
  RecordProperty("noncoop_over_coop", std::to_string(noncoop));
  RecordProperty("partial_allocation_over_coop", std::to_string(partial));
  EXPECT_GE(noncoop, 0.80);
  EXPECT_GT(noncoop, partial + 0.15);
  EXPECT_GT(worst, 0.3);
}

TEST(TenancyNoncoop, StructuredProbeFindsNoProfitableMisreport) {
  // Hundreds of instances, every family, 2-3 tenants and types (the probe runs the mechanism
  // some 40 times per instance); larger instances are probed in the test below.
  const RandomFamily families[] = {RandomFamily::kGeneric, RandomFamily::kIdenticalRows,
                                   RandomFamily::kSpecialists, RandomFamily::kSingleDevices,
                                   RandomFamily::kExtremeSpeeds};
  StructuredProbeOptions probe;
  probe.scales = {0.1, 0.5, 2.0, 10.0};
  probe.local_search_steps = 4;
  double worst = 0;
  int trials = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    RandomInstanceOptions o;
    o.min_tenants = 2;
    o.max_tenants = 3;
    o.max_types = 3;
    o.weights = seed % 4 == 0;
    o.family = families[seed % 5];
    const Instance inst = random_instance(seed, o);
    probe.seed = seed;
    const StrategyProbe p = structured_strategy_probe(inst, "oef-noncoop", probe);
    trials += p.trials_run;
    worst = std::max(worst, p.max_gain);
    EXPECT_LE(p.max_gain, kPropertyTol) << "seed " << seed << " tenant " << p.tenant;
  }
  RecordProperty("misreports", std::to_string(trials));
  RecordProperty("worst_gain", std::to_string(worst));
  EXPECT_GT(trials, 200 * 20);
}

TEST(TenancyNoncoop, StructuredProbeOnLargerInstances) {
  const std::vector<Instance> suite = random_suite(4, 77);
  for (std::size_t k = 0; k < suite.size(); ++k) {
    StructuredProbeOptions probe;
    probe.seed = k;
    for (const std::string policy : {"oef-noncoop", "equal"}) {
      const StrategyProbe p = structured_strategy_probe(suite[k], policy, probe);
      EXPECT_LE(p.max_gain, kPropertyTol) << policy << " instance " << k << " tenant " << p.tenant;
    }
  }
}

TEST(TenancyNoncoop, StructuredProbeCatchesManipulablePolicies) {
  // The probe must be able to fail: Nash (CEEI) and the coop LP reward exaggeration.
  double nash = 0, coop = 0;
  const std::vector<Instance> suite = random_suite(10, 5);
  for (const Instance& inst : suite) {
    nash = std::max(nash, structured_strategy_probe(inst, "nash").max_gain);
    coop = std::max(coop, structured_strategy_probe(inst, "oef-coop").max_gain);
  }
  EXPECT_GT(nash, 1e-3);
  EXPECT_GT(coop, 1e-3);
}

TEST(TenancyNoncoop, ClaimantBundleIgnoresItsOwnReportAndOthersGetPartialAllocation) {
  const std::vector<Instance> suite = random_suite(40, 11);
  for (std::size_t k = 0; k < suite.size(); ++k) {
    const Instance& inst = suite[k];
    const int n = inst.num_tenants(), m = inst.num_types();
    for (int c = 0; c < n; ++c) {
      SCOPED_TRACE("instance " + std::to_string(k) + " claimant " + std::to_string(c));
      const Matrix x = claimant_allocation(inst, c);
      expect_feasible(x);
      // Another report with the same usable types: the claimant's bundle does not move.
      Instance lie = inst;
      for (int j = 0; j < m; ++j) lie.s(c, j) *= 0.2 + 1.7 * ((j + c) % 3);
      const Matrix y = claimant_allocation(lie, c);
      for (int j = 0; j < m; ++j) EXPECT_NEAR(x(c, j), y(c, j), 1e-12);
      // The others hold exactly Partial Allocation without the claimant.
      std::vector<int> others;
      for (int i = 0; i < n; ++i) {
        if (i != c) others.push_back(i);
      }
      const Matrix pa = allocate(sub_instance(inst, others), "partial-allocation").x;
      for (std::size_t r = 0; r < others.size(); ++r) {
        for (int j = 0; j < m; ++j) EXPECT_NEAR(x(others[r], j), pa(static_cast<int>(r), j), 1e-12);
      }
      // What they leave goes to the claimant on the types it can use, and only there.
      for (int j = 0; j < m; ++j) {
        double col = 0;
        for (int i = 0; i < n; ++i) col += x(i, j);
        if (inst.s(c, j) > 0) {
          EXPECT_NEAR(col, 1.0, 1e-9);
        } else {
          EXPECT_EQ(x(c, j), 0.0);
        }
      }
    }
    // oef-noncoop is the uniform average of the n claimant terms.
    const Matrix avg = allocate(inst, "oef-noncoop").x;
    Matrix sum(n, m);
    for (int c = 0; c < n; ++c) {
      const Matrix t = claimant_allocation(inst, c);
      for (std::size_t e = 0; e < sum.data.size(); ++e) sum.data[e] += t.data[e] / n;
    }
    for (std::size_t e = 0; e < sum.data.size(); ++e) EXPECT_NEAR(avg.data[e], sum.data[e], 1e-12);
  }
}

TEST(TenancyNoncoop, WorstCaseGuarantees) {
  const std::vector<Instance> suite = random_suite(150, 3);
  for (std::size_t k = 0; k < suite.size(); ++k) {
    const Instance& inst = suite[k];
    const int n = inst.num_tenants();
    const Matrix x = allocate(inst, "oef-noncoop").x;
    const Matrix nash = allocate(inst, "nash").x;
    const Matrix v = normalised(inst);
    const std::vector<double> si = sharing_incentive_margins(inst, x);
    const Matrix e = equal_split(inst);
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE("instance " + std::to_string(k) + " tenant " + std::to_string(i));
      const double u = utility(v, inst.counts, x, i);
      if (n <= 2) {
        EXPECT_GE(si[i], -kPropertyTol);  // the usable-type equal split
      } else {
        EXPECT_GE(u, utility(v, inst.counts, e, i) / std::exp(1.0) - kPropertyTol);
        EXPECT_GE(u,
                  (n - 1.0) / n / std::exp(1.0) * utility(v, inst.counts, nash, i) - kPropertyTol);
      }
    }
  }
}

TEST(TenancyNoncoop, TwoTenantsGetTheUsableTypeEqualSplit) {
  RandomInstanceOptions o;
  o.min_tenants = 2;
  o.max_tenants = 2;
  o.zero_probability = 0.3;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Instance inst = random_instance(seed, o);
    const Matrix x = allocate(inst, "oef-noncoop").x;
    const Matrix eq = allocate(inst, "equal").x;
    if (inst.weights[0] != inst.weights[1]) continue;  // uniform rotation vs weighted split
    for (std::size_t e = 0; e < x.data.size(); ++e) EXPECT_NEAR(x.data[e], eq.data[e], 1e-7);
  }
}

TEST(TenancyNoncoop, EqualNeverGivesATypeItsHolderCannotUse) {
  RandomInstanceOptions o;
  o.zero_probability = 0.4;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const Instance inst = random_instance(seed, o);
    const Allocation a = allocate(inst, "equal");
    EXPECT_TRUE(is_sharing_incentive(inst, a.x));
    EXPECT_TRUE(is_envy_free(inst, a.x));
    for (int j = 0; j < inst.num_types(); ++j) {
      double col = 0, usable_weight = 0;
      for (int i = 0; i < inst.num_tenants(); ++i) {
        if (inst.s(i, j) <= 0) {
          EXPECT_EQ(a.x(i, j), 0.0) << "seed " << seed;
        } else {
          usable_weight += inst.weights[i];
        }
        col += a.x(i, j);
      }
      // Nothing idles on a type somebody can use; each holder gets its weight's part.
      EXPECT_NEAR(col, usable_weight > 0 ? 1.0 : 0.0, 1e-12);
      for (int i = 0; i < inst.num_tenants(); ++i) {
        if (inst.s(i, j) > 0) {
          EXPECT_NEAR(a.x(i, j), inst.weights[i] / usable_weight, 1e-12);
        }
      }
    }
  }
}

}  // namespace
}  // namespace hetsgd::tenancy
