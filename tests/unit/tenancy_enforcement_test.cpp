// Deficit-counter enforcement of fractional shares, throughput EMA and the sharing runner
// (core/tenancy/README.md §Enforcement).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>

#include "core/error.h"
#include "core/tenancy/deficit_scheduler.h"
#include "core/tenancy/random_instance.h"
#include "core/tenancy/share_runner.h"
#include "core/tenancy/throughput_tracker.h"

namespace hetsgd::tenancy {
namespace {

// `rounds` enforcement rounds of one second each.
RunOptions rounds_of_a_second(int rounds) {
  RunOptions o;
  o.rounds = rounds;
  o.round_seconds = 1.0;
  return o;
}

TEST(TenancyEnforcement, RealisedSharesStayWithinOneDeviceRound) {
  const double r = 2.5;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const Instance inst = random_instance(seed);
    for (const std::string policy : {"oef-coop", "oef-noncoop", "gavel", "equal"}) {
      const Allocation a = allocate(inst, policy);
      DeficitScheduler sched(inst.counts, r);
      sched.set_shares(inst.tenants, a.x);
      for (int round = 0; round < 200; ++round) {
        const RoundPlan plan = sched.next_round();
        for (int j = 0; j < inst.num_types(); ++j) {
          int used = 0;
          for (int i = 0; i < inst.num_tenants(); ++i) used += plan.count[i][j];
          ASSERT_LE(used, inst.counts[j]);
        }
        ASSERT_LT(sched.max_lag(), 1.0 + 1e-9)
            << "seed " << seed << " " << policy << " round " << round;
      }
      // After T rounds the realised share is within 1 / (c_j T) of x.
      const Matrix real = sched.realised_shares();
      for (int i = 0; i < inst.num_tenants(); ++i) {
        for (int j = 0; j < inst.num_types(); ++j) {
          EXPECT_NEAR(real(i, j), a.x(i, j), 1.0 / (inst.counts[j] * 200.0) + 1e-9)
              << "seed " << seed << " " << policy;
        }
      }
    }
  }
}

TEST(TenancyEnforcement, JobsKeepTheirDevices) {
  // Shares that are whole devices must never move anything after the first round.
  DeficitScheduler sched({2, 2}, 1.0);
  sched.set_shares({"a", "b"}, Matrix::from_rows({{1.0, 0.0}, {0.0, 1.0}}));
  EXPECT_EQ(sched.next_round().moves, 4);  // from idle
  for (int k = 0; k < 20; ++k) EXPECT_EQ(sched.next_round().moves, 0);
  // Half shares of one device each on 2 devices: one device each, held steadily.
  DeficitScheduler half({2}, 1.0);
  half.set_shares({"a", "b"}, Matrix::from_rows({{0.5}, {0.5}}));
  half.next_round();
  for (int k = 0; k < 20; ++k) EXPECT_EQ(half.next_round().moves, 0);
}

TEST(TenancyEnforcement, UnassignedCapacityStaysIdleAndLimitsAreRespected) {
  DeficitScheduler sched({4}, 1.0);
  sched.set_shares({"a"}, Matrix::from_rows({{0.3}}));
  int used = 0;
  for (int k = 0; k < 100; ++k) used += sched.next_round().count[0][0];
  EXPECT_EQ(used, 120);  // 0.3 * 4 devices * 100 rounds
  // A job that can use at most one device cannot bank what it was owed beyond that.
  DeficitScheduler capped({4}, 1.0);
  capped.set_shares({"a", "b"}, Matrix::from_rows({{0.75}, {0.25}}), {{1}, {4}});
  for (int k = 0; k < 50; ++k) {
    const RoundPlan p = capped.next_round();
    EXPECT_LE(p.count[0][0], 1);
  }
  EXPECT_LT(capped.max_lag(), 1.0 + 1e-9);
}

TEST(TenancyEnforcement, ArrivalsAndDeparturesRecomputeAtTheNextRound) {
  Instance inst = random_instance(7, {3, 3, 3, 3, 0.0, false});
  SharingSetup setup = make_setup(inst);
  setup.arrive_round = {0, 10, 0};
  setup.leave_round = {-1, -1, 30};
  const EnforcementResult res = run_enforcement(setup, "oef-coop", rounds_of_a_second(60));
  EXPECT_EQ(res.recomputes, 3);  // start, arrival of t1, departure of t2
  EXPECT_EQ(res.rounds_present[1], 50);
  // t2 left at round 30: shown as departed, with its shares frozen at that point.
  EXPECT_EQ(res.departed_round[2], 30);
  EXPECT_EQ(res.departed_round[0], -1);
  EXPECT_EQ(res.departed_round[1], -1);
  EXPECT_EQ(res.rounds_present[2], 30);
  EXPECT_LT(res.max_lag, 1.0 + 1e-9);
  for (int j = 0; j < inst.num_types(); ++j) {
    // t1 was present for 50 rounds: 20 under the three-tenant shares, 30 under the pair's.
    EXPECT_NEAR(res.realised(1, j), res.target(1, j), 1.0 / (inst.counts[j] * 50.0) + 1e-9);
    EXPECT_NEAR(res.realised(2, j), res.target(2, j), 1.0 / (inst.counts[j] * 30.0) + 1e-9);
  }
  double departed_target = 0;
  for (int j = 0; j < inst.num_types(); ++j) departed_target += res.target(2, j);
  EXPECT_GT(departed_target, 0.0);
  // The events say what happened, in order, and every round is logged.
  std::vector<std::string> kinds;
  for (const auto& e : res.events) {
    kinds.push_back(std::to_string(e.round) + " " + event_kind_name(e.kind) +
                    (e.tenant >= 0 ? " " + inst.tenants[e.tenant] : ""));
  }
  const std::vector<std::string> expected = {"0 arrive t0",  "0 arrive t2", "0 allocate",
                                             "10 arrive t1", "10 allocate", "30 leave t2",
                                             "30 allocate"};
  EXPECT_EQ(kinds, expected);
  ASSERT_EQ(res.round_log.size(), 60u);
  EXPECT_EQ(res.round_log[5].present, (std::vector<int>{0, 2}));
  EXPECT_EQ(res.round_log[40].present, (std::vector<int>{0, 1}));
  for (const RoundRecord& rec : res.round_log) {
    for (int j = 0; j < inst.num_types(); ++j) {
      double held = 0;
      for (int i = 0; i < 3; ++i) held += rec.held(i, j);
      EXPECT_LE(held, inst.counts[j]);
      for (int i : rec.present) {
        const int rounds = rec.round + 1 - setup.arrive_round[i];
        EXPECT_NEAR(rec.realised(i, j), rec.average_target(i, j),
                    1.0 / (inst.counts[j] * rounds) + 1e-9);
      }
    }
  }
  EXPECT_GT(res.samples[1], 0.0);
}

TEST(TenancyEnforcement, ThroughputEmaAndDriftTriggerRecompute) {
  ThroughputTracker tr(Matrix::from_rows({{100, 50}}), 0.5, 0.2);
  // Observed 200/s on type 0: measured; type 1 is unmeasured and keeps the profile's ratio.
  tr.observe(0, {1, 0}, 200 * 10.0, 10.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 0), 200.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 1), 100.0);
  EXPECT_TRUE(tr.measured(0, 0));
  EXPECT_FALSE(tr.measured(0, 1));
  EXPECT_NEAR(tr.drift(), 0.0, 1e-12);  // a uniformly faster job is no real change
  EXPECT_FALSE(tr.needs_recompute());
  // Type 1 turns out 4x slower relative to type 0 than profiled: a real change.
  tr.observe(0, {0, 2}, 25 * 2 * 4.0, 4.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 1), 25.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 0), 200.0);
  EXPECT_NEAR(tr.drift(), 0.5 - 0.125, 1e-12);
  EXPECT_TRUE(tr.needs_recompute());
  tr.mark_recomputed();
  EXPECT_FALSE(tr.needs_recompute());
  // Later observations are averaged in (weight 0.5).
  tr.observe(0, {1, 0}, 100.0, 1.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 0), 150.0);
  // Mixed holdings: the observed/predicted factor (here 2) scales both held types.
  tr.observe(0, {1, 1}, (150 + 25) * 2.0, 1.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 0), 225.0);
  EXPECT_DOUBLE_EQ(tr.estimate()(0, 1), 37.5);
}

TEST(TenancyEnforcement, UniformlyFasterJobsKeepTheAllocationAndFollowX) {
  // Real jobs 3x faster than the jobs file says, on every type: the normalised rows do not move,
  // so the first allocation stays and the realised shares follow it.
  Instance inst;
  inst.tenants = {"alice", "bob", "carol"};
  inst.weights = {1, 1, 1};
  inst.types = {"fast", "slow"};
  inst.counts = {2, 2};
  inst.s = Matrix::from_rows({{1200, 300}, {600, 400}, {1000, 500}});
  SharingSetup setup = make_setup(inst);
  setup.types[0].devices = {DeviceId::cpu(0), DeviceId::cpu(1)};
  setup.types[1].devices = {DeviceId::cpu(2), DeviceId::cpu(3)};
  const RunRoundFn hook = [&](int tenant, const std::vector<DeviceId>& held, double seconds) {
    double rate = 0;
    for (const DeviceId& d : held) rate += 3.0 * inst.s(tenant, d.ordinal >= 2 ? 1 : 0);
    TenantRound out;
    out.samples = rate * seconds;
    return out;
  };
  for (const std::string policy : {"oef-coop", "oef-noncoop", "partial-allocation", "equal"}) {
    const RunOptions opt = rounds_of_a_second(50);
    const EnforcementResult res = run_enforcement(setup, policy, opt, hook);
    EXPECT_EQ(res.recomputes, 1) << policy;
    const Matrix x = allocate(inst, policy).x;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 2; ++j) {
        const double enforced = x(i, j) < opt.min_share ? 0.0 : x(i, j);
        EXPECT_NEAR(res.realised(i, j), enforced, 1.0 / (2 * 50.0) + 1e-9) << policy;
        EXPECT_NEAR(res.last_x(i, j), x(i, j), 1e-9) << policy;
      }
    }
  }
}

TEST(TenancyEnforcement, SliversBelowTheToleranceGetNoDevice) {
  Instance inst;
  inst.tenants = {"a", "b"};
  inst.weights = {1, 1};
  inst.types = {"t"};
  inst.counts = {1};
  inst.s = Matrix::from_rows({{10}, {10}});
  SharingSetup setup = make_setup(inst);
  RunOptions opt = rounds_of_a_second(30);
  opt.min_share = 0.6;  // exaggerated: both equal shares (0.5) fall below it
  const EnforcementResult res = run_enforcement(setup, "equal", opt);
  for (const RoundRecord& rec : res.round_log) {
    EXPECT_EQ(rec.held(0, 0) + rec.held(1, 0), 0.0);
    EXPECT_EQ(rec.target(0, 0), 0.0);
  }
  EXPECT_NEAR(res.last_x(0, 0), 0.5, 1e-12);  // the computed x is still reported
  opt.min_share = 1e-3;
  const EnforcementResult kept = run_enforcement(setup, "equal", opt);
  EXPECT_NEAR(kept.realised(0, 0), 0.5, 1.0 / 30 + 1e-9);
  opt.min_share = 1.5;
  EXPECT_THROW(run_enforcement(setup, "equal", opt), InvalidArgument);
}

TEST(TenancyEnforcement, HookRunsJobsOnHeldDevicesWithEmulatedSpeeds) {
  Instance inst;
  inst.tenants = {"a", "b"};
  inst.weights = {1, 1};
  inst.types = {"fast", "slow"};
  inst.counts = {2, 2};
  inst.s = Matrix::from_rows({{100, 50}, {100, 90}});
  SharingSetup setup = make_setup(inst);
  setup.types[0].devices = {DeviceId::cpu(0), DeviceId::cpu(1)};
  setup.types[1].devices = {DeviceId::cpu(2), DeviceId::cpu(3)};
  setup.speed_factor(0, 1) = 0.5;  // tenant a runs at half speed on "slow" (emulation)
  std::mutex mu;
  std::vector<int> device_rounds(4, 0);
  bool saw_half = false;
  // The real job of tenant b turns out 3x slower on "slow" than profiled: drift must trigger.
  const RunRoundFn hook = [&](int tenant, const std::vector<DeviceId>& held, double seconds) {
    std::lock_guard<std::mutex> lock(mu);
    double rate = 0;
    for (const DeviceId& d : held) {
      ++device_rounds[d.ordinal];
      const bool slow = d.ordinal >= 2;
      if (tenant == 0 && slow) saw_half = saw_half || d.speed == 0.5;
      rate += slow ? (tenant == 0 ? 50 : 30) : 100;
    }
    TenantRound out;
    out.samples = rate * seconds;
    return out;
  };
  const RunOptions opt = rounds_of_a_second(40);
  const EnforcementResult res = run_enforcement(setup, "oef-coop", opt, hook);
  EXPECT_GE(res.recomputes, 2);
  EXPECT_NEAR(res.throughput_estimate(1, 1), 30.0, 5.0);
  int total = 0;
  for (int c : device_rounds) total += c;
  EXPECT_LE(total, 4 * 40);
  EXPECT_GT(total, 0);
  EXPECT_GT(res.samples[0] + res.samples[1], 0);
  if (res.realised(0, 1) > 0) {
    EXPECT_TRUE(saw_half);
  }
  // Real jobs need named devices.
  SharingSetup unnamed = make_setup(inst);
  EXPECT_THROW(run_enforcement(unnamed, "equal", opt, hook), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd::tenancy

namespace hetsgd::tenancy {
namespace {

SharingSetup three_tenants_on_two_devices() {
  Instance inst;
  inst.tenants = {"steady", "short", "broken"};
  inst.weights = {1, 1, 1};
  inst.types = {"cpu"};
  inst.counts = {2};
  inst.s = Matrix::from_rows({{100}, {100}, {100}});
  SharingSetup setup = make_setup(inst);
  setup.types[0].devices = {DeviceId::cpu(0), DeviceId::cpu(1)};
  return setup;
}

TEST(TenancyJobEnd, FinishedJobReleasesItsDevicesAndFailedJobStopsAlone) {
  const SharingSetup setup = three_tenants_on_two_devices();
  std::mutex mu;
  std::vector<int> rounds_run(3, 0);
  const RunRoundFn hook = [&](int tenant, const std::vector<DeviceId>& held, double seconds) {
    std::lock_guard<std::mutex> lock(mu);
    if (tenant == 2) throw NumericalError("loss is NaN");
    TenantRound out;
    out.samples = 100.0 * static_cast<double>(held.size()) * seconds;
    out.updates = 4;
    out.seconds = seconds;
    // "short" is done after its second round with devices.
    out.done = tenant == 1 && ++rounds_run[1] == 2;
    return out;
  };
  const EnforcementResult res = run_enforcement(setup, "equal", rounds_of_a_second(20), hook);
  EXPECT_EQ(res.rounds, 20);
  EXPECT_TRUE(res.any_failed());
  const int failed = res.failed_round[2], finished = res.finished_round[1];
  ASSERT_GE(failed, 0);
  ASSERT_GE(finished, 0);
  EXPECT_EQ(res.failed_round[0], -1);
  EXPECT_EQ(res.finished_round[0], -1);
  EXPECT_NE(res.failure[2].find("loss is NaN"), std::string::npos);
  EXPECT_EQ(res.departed_round[1], -1);  // finishing is not leaving
  // From the round after both ended, "steady" holds both devices, every round.
  const int last_end = std::max(failed, finished);
  for (const RoundRecord& rec : res.round_log) {
    if (rec.round <= last_end) continue;
    EXPECT_EQ(rec.present, std::vector<int>{0}) << "round " << rec.round;
    EXPECT_EQ(rec.held(0, 0), 2.0) << "round " << rec.round;
    EXPECT_EQ(rec.held(1, 0) + rec.held(2, 0), 0.0) << "round " << rec.round;
  }
  EXPECT_LT(last_end, 10);
  // The finish and the failure are events, and the allocation was recomputed for them.
  int finish_events = 0, fail_events = 0;
  for (const EnforcementEvent& e : res.events) {
    finish_events += e.kind == EnforcementEvent::Kind::kFinish && e.tenant == 1;
    fail_events += e.kind == EnforcementEvent::Kind::kFail && e.tenant == 2;
  }
  EXPECT_EQ(finish_events, 1);
  EXPECT_EQ(fail_events, 1);
  EXPECT_GE(res.recomputes, 2);
  EXPECT_EQ(res.updates[0] % 4, 0);
  EXPECT_GT(res.updates[0], 0);
  EXPECT_GT(res.train_seconds[0], 0.0);
  // A finished job's last round is not read as a slowdown: the estimate stays at 100/s.
  EXPECT_NEAR(res.throughput_estimate(1, 0), 100.0, 1e-9);
}

TEST(TenancyJobEnd, RunStopsOnceEveryJobHasEnded) {
  const SharingSetup setup = three_tenants_on_two_devices();
  const RunRoundFn hook = [](int tenant, const std::vector<DeviceId>& held, double seconds) {
    if (tenant == 2) throw NumericalError("diverged");
    TenantRound out;
    out.samples = 10.0 * static_cast<double>(held.size()) * seconds;
    out.done = true;  // one round is all these jobs need
    return out;
  };
  RunOptions opt = rounds_of_a_second(50);
  opt.parallel = false;
  const EnforcementResult res = run_enforcement(setup, "equal", opt, hook);
  EXPECT_LT(res.rounds, 10);
  ASSERT_FALSE(res.events.empty());
  EXPECT_EQ(res.events.back().kind, EnforcementEvent::Kind::kStop);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(res.finished_round[i] >= 0 || res.failed_round[i] >= 0) << i;
  }
}

}  // namespace
}  // namespace hetsgd::tenancy
