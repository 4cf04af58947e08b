// The strategy-proof policies (oef-noncoop = rotating-claimant Partial Allocation, equal):
// efficiency on the random suite, the structured strategy-proofness probe, the guarantees of
// allocation.h and the facts the claimant construction rests on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "core/tenancy/allocation.h"
#include "core/tenancy/properties.h"
#include "core/tenancy/random_instance.h"
#include "core/tenancy/share_report.h"

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

// A lighter probe than the default, for the loops over many instances: single entries scaled
// by 0.1, 0.5, 2 and 10, and 4 hill-climbing steps.
StructuredProbeOptions misreport_probe() {
  StructuredProbeOptions probe;
  probe.scales = {0.1, 0.5, 2.0, 10.0};
  probe.local_search_steps = 4;
  return probe;
}

// Random instances of 2 or 3 tenants on up to 3 device types.
RandomInstanceOptions pairs_and_triples() {
  RandomInstanceOptions o;
  o.min_tenants = 2;
  o.max_tenants = o.max_types = 3;
  return o;
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
    // Not guaranteed for n >= 3, but it held on every suite instance (core/tenancy/README.md).
    EXPECT_TRUE(is_envy_free(inst, a.x));
    EXPECT_TRUE(is_sharing_incentive(inst, a.x));
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
  StructuredProbeOptions probe = misreport_probe();
  double worst = 0;
  int trials = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    RandomInstanceOptions o = pairs_and_triples();
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
    // oef-noncoop is the average of the n claimant terms with the weights' claimant odds.
    const Matrix avg = allocate(inst, "oef-noncoop").x;
    const std::vector<double> p = claimant_probabilities(inst.weights);
    Matrix sum(n, m);
    for (int c = 0; c < n; ++c) {
      const Matrix t = claimant_allocation(inst, c);
      for (std::size_t e = 0; e < sum.data.size(); ++e) sum.data[e] += p[c] * t.data[e];
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

namespace hetsgd::tenancy {
namespace {

Instance weighted_pair(double w0, double w1, const std::vector<double>& row0,
                       const std::vector<double>& row1, const std::vector<int>& counts) {
  Instance inst;
  inst.tenants = {"heavy", "light"};
  inst.weights = {w0, w1};
  for (std::size_t j = 0; j < counts.size(); ++j) inst.types.push_back("t" + std::to_string(j));
  inst.counts = counts;
  inst.s = Matrix(2, static_cast<int>(counts.size()));
  for (std::size_t j = 0; j < counts.size(); ++j) {
    inst.s(0, static_cast<int>(j)) = row0[j];
    inst.s(1, static_cast<int>(j)) = row1[j];
  }
  return inst;
}

TEST(TenancyNoncoopWeighted, ClaimantOddsSumToOneAndAreUniformForUnitWeights) {
  for (const std::vector<double>& w : std::vector<std::vector<double>>{
           {1}, {1, 1}, {3, 1}, {10, 1}, {1, 1, 1, 1}, {2, 1, 0.5}, {1000, 0.001, 1}}) {
    const std::vector<double> p = claimant_probabilities(w);
    double sum = 0;
    for (double q : p) {
      EXPECT_GE(q, 0.0);
      sum += q;
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  for (double q : claimant_probabilities({2, 2, 2, 2})) EXPECT_EQ(q, 0.25);  // exact
}

TEST(TenancyNoncoopWeighted, PairsGetTheirWeightRatio) {
  // 3:1 and 10:1 on the same and on different rows: every type both can use is split w_i / W.
  for (const double w : {3.0, 10.0}) {
    for (const std::vector<double>& light :
         std::vector<std::vector<double>>{{100, 50, 10}, {10, 80, 40}, {5, 0, 40}}) {
      SCOPED_TRACE("weight " + std::to_string(w));
      const Instance inst = weighted_pair(w, 1.0, {100, 50, 10}, light, {2, 3, 1});
      const Allocation a = allocate(inst, "oef-noncoop");
      ASSERT_FALSE(a.fallback) << a.note;
      EXPECT_TRUE(a.strategy_proof);
      for (int j = 0; j < inst.num_types(); ++j) {
        if (inst.s(1, j) > 0) {
          EXPECT_NEAR(a.x(0, j), w / (w + 1), 1e-7);
          EXPECT_NEAR(a.x(1, j), 1 / (w + 1), 1e-7);
        } else {
          EXPECT_NEAR(a.x(0, j), 1.0, 1e-7);
        }
      }
      // The weighted properties the report checks.
      EXPECT_TRUE(is_envy_free(inst, a.x));
      EXPECT_TRUE(is_sharing_incentive(inst, a.x));
    }
  }
}

TEST(TenancyNoncoopWeighted, WeightedPairsAndTriplesResistMisreports) {
  StructuredProbeOptions probe = misreport_probe();
  int instances = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    RandomInstanceOptions o = pairs_and_triples();
    o.weights = false;
    Instance inst = random_instance(seed, o);
    // Strongly unequal weights: 3:1, 10:1 and triples such as 10:3:1.
    const double table[] = {3.0, 10.0, 1.0, 0.1};
    for (int i = 0; i < inst.num_tenants(); ++i) inst.weights[i] = table[(seed + i) % 4];
    probe.seed = seed;
    const StrategyProbe p = structured_strategy_probe(inst, "oef-noncoop", probe);
    EXPECT_LE(p.max_gain, kPropertyTol) << "seed " << seed << " tenant " << p.tenant;
    const StrategyProbe r = strategy_proofness_probe(inst, "oef-noncoop", 30, seed);
    EXPECT_LE(r.max_gain, kPropertyTol) << "seed " << seed << " tenant " << r.tenant;
    ++instances;
  }
  EXPECT_EQ(instances, 60);
}

TEST(TenancyNoncoopWeighted, IdenticalJobTermsAreTheMechanismsOwn) {
  for (const std::vector<double>& w :
       std::vector<std::vector<double>>{{10, 3, 1}, {3, 1, 1}, {2, 1, 0.5, 1}, {1, 1, 1}, {3, 1}}) {
    Instance inst;
    inst.weights = w;
    for (std::size_t i = 0; i < w.size(); ++i) inst.tenants.push_back("t" + std::to_string(i));
    inst.types = {"gpu"};  // with two types the Nash split between them is not unique
    inst.counts = {3};
    inst.s = Matrix(static_cast<int>(w.size()), 1, 50.0);
    const Matrix t = identical_job_terms(w);
    for (int c = 0; c < inst.num_tenants(); ++c) {
      const Matrix x = claimant_allocation(inst, c);
      for (int i = 0; i < inst.num_tenants(); ++i) {
        EXPECT_NEAR(x(i, 0), t(i, c), 1e-6) << "claimant " << c << " tenant " << i;
      }
    }
  }
}

TEST(TenancyNoncoopWeighted, TriplesOfIdenticalJobsFollowTheirWeights) {
  // Identical rows, weights 10:3:1, 3:1:1 and 2:1:0.5: heavier tenants get strictly more, and
  // the worst share / (w_i / W) is at least that of uniform odds (the weights have an effect).
  for (const std::vector<double>& w :
       std::vector<std::vector<double>>{{10, 3, 1}, {3, 1, 1}, {2, 1, 0.5}}) {
    Instance inst;
    inst.tenants = {"a", "b", "c"};
    inst.weights = w;
    inst.types = {"gpu"};
    inst.counts = {4};
    inst.s = Matrix(3, 1, 100.0);
    const Allocation a = allocate(inst, "oef-noncoop");
    EXPECT_TRUE(a.strategy_proof);
    const Matrix& x = a.x;
    EXPECT_GT(x(0, 0), x(1, 0));
    EXPECT_GE(x(1, 0), x(2, 0) - 1e-9);
    const double total = w[0] + w[1] + w[2];
    const Matrix t = identical_job_terms(w);
    double worst = 1e9, worst_uniform = 1e9;
    for (int i = 0; i < 3; ++i) {
      const double uniform = (t(i, 0) + t(i, 1) + t(i, 2)) / 3;
      worst = std::min(worst, x(i, 0) / (w[i] / total));
      worst_uniform = std::min(worst_uniform, uniform / (w[i] / total));
    }
    EXPECT_GT(worst, worst_uniform + 0.01);
    RecordProperty("worst_ratio_" + std::to_string(static_cast<int>(w[0])), std::to_string(worst));
  }
}

}  // namespace
}  // namespace hetsgd::tenancy

namespace hetsgd::tenancy {
namespace {

TEST(TenancyNoncoopWeighted, PropertiesOnRandomWeightedInstances) {
  // Weights drawn from {1, 2, 0.5, 1.5}, 2-5 tenants: pairs are always weighted-EF and
  // weighted-SI (the weighted split); for n >= 3 the rates are recorded (core/tenancy/README.md
  // quotes them), and the allocation is always feasible.
  int pairs = 0, many = 0, many_ef = 0, many_si = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    RandomInstanceOptions o;
    o.min_tenants = 2;
    o.weights = true;
    const Instance inst = random_instance(seed, o);
    const Allocation a = allocate(inst, "oef-noncoop");
    ASSERT_FALSE(a.fallback) << a.note;
    expect_feasible(a.x);
    if (inst.num_tenants() == 2) {
      ++pairs;
      EXPECT_TRUE(is_envy_free(inst, a.x)) << "seed " << seed;
      EXPECT_TRUE(is_sharing_incentive(inst, a.x)) << "seed " << seed;
    } else {
      ++many;
      many_ef += is_envy_free(inst, a.x);
      many_si += is_sharing_incentive(inst, a.x);
    }
  }
  EXPECT_GT(pairs, 10);
  RecordProperty("pairs", std::to_string(pairs));
  RecordProperty("n3plus", std::to_string(many));
  RecordProperty("n3plus_weighted_ef", std::to_string(many_ef));
  RecordProperty("n3plus_weighted_si", std::to_string(many_si));
  std::printf("pairs %d; n>=3: %d instances, weighted EF %d, weighted SI %d\n", pairs, many,
              many_ef, many_si);
}

// Weights that are each finite (as a jobs file may give them) but whose sum overflows leave
// the claimant-odds LP without a bound: every share term's coefficient w_i / W is 0, so t
// grows without limit and Clp proves no optimum. The odds are then uniform, and the
// allocation, the table and the JSON say that the weights were not honoured.
TEST(TenancyNoncoopWeighted, ANonOptimalOddsLpFallsBackToUniformOddsAndSaysSo) {
  const std::vector<double> w = {1e308, 1.5e308};
  ASSERT_TRUE(std::isinf(w[0] + w[1]));
  std::string lp_note;
  EXPECT_EQ(claimant_probabilities(w, &lp_note), (std::vector<double>{0.5, 0.5}));
  EXPECT_NE(lp_note.find("claimant-odds LP"), std::string::npos) << lp_note;
  EXPECT_NE(lp_note.find("uniform odds used"), std::string::npos) << lp_note;

  Instance inst;
  inst.tenants = {"heavy", "heavier"};
  inst.weights = w;
  inst.types = {"gpu"};
  inst.counts = {2};
  inst.s = Matrix(2, 1);
  inst.s(0, 0) = 100;
  inst.s(1, 0) = 100;
  const Allocation a = allocate(inst, "oef-noncoop");
  EXPECT_TRUE(a.fallback) << a.note;
  EXPECT_NE(a.note.find(lp_note + " (weights ignored)"), std::string::npos) << a.note;
  // Uniform odds of the two claimant terms: the type is split equally.
  EXPECT_NEAR(a.x(0, 0), 0.5, 1e-9);
  EXPECT_NEAR(a.x(1, 0), 0.5, 1e-9);

  const ShareReport report = compare_policies(inst, {"oef-noncoop"});
  std::ostringstream table;
  print_share_table(report, table);
  EXPECT_NE(table.str().find(" FALLBACK"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("(weights ignored)"), std::string::npos) << table.str();
  EXPECT_EQ(share_report_json(report)["policies"][0]["fallback"], true);
}

}  // namespace
}  // namespace hetsgd::tenancy
