#include "core/tenancy/share_runner.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "core/error.h"
#include "core/tenancy/deficit_scheduler.h"
#include "core/tenancy/throughput_tracker.h"

namespace hetsgd::tenancy {

SharingSetup make_setup(const Instance& inst) {
  validate(inst);
  SharingSetup s;
  s.instance = inst;
  for (int j = 0; j < inst.num_types(); ++j) s.types.push_back({inst.types[j], inst.counts[j], {}});
  s.arrive_round.assign(inst.num_tenants(), 0);
  s.leave_round.assign(inst.num_tenants(), -1);
  s.speed_factor = Matrix(inst.num_tenants(), inst.num_types(), 1.0);
  return s;
}

SharingSetup make_setup(const JobsFile& file, const ProfileFn& profile,
                        const std::vector<DeviceId>& present) {
  SharingSetup s;
  s.instance = make_instance(file, profile, present);
  s.types = resolve_types(file, present);
  const int n = s.instance.num_tenants(), m = s.instance.num_types();
  s.speed_factor = Matrix(n, m, 1.0);
  for (int i = 0; i < n; ++i) {
    s.arrive_round.push_back(file.tenants[i].arrive_round);
    s.leave_round.push_back(file.tenants[i].leave_round);
    for (int j = 0; j < m; ++j) {
      const auto it = file.tenants[i].emulated_speed.find(s.instance.types[j]);
      if (it != file.tenants[i].emulated_speed.end()) s.speed_factor(i, j) = it->second;
    }
  }
  return s;
}

EnforcementResult run_enforcement(const SharingSetup& setup, const std::string& policy,
                                  const RunOptions& options, const RunRoundFn& run_round) {
  const Instance& inst = setup.instance;
  validate(inst);
  const int n = inst.num_tenants(), m = inst.num_types();
  HETSGD_CHECK(options.rounds >= 0, "enforcement: rounds " << options.rounds << " < 0");
  HETSGD_CHECK(static_cast<int>(setup.types.size()) == m,
               "enforcement: " << setup.types.size() << " device type specs for " << m << " types");
  std::vector<int> arrive = setup.arrive_round, leave = setup.leave_round;
  arrive.resize(n, 0);
  leave.resize(n, -1);
  Matrix factor = setup.speed_factor.rows == n ? setup.speed_factor : Matrix(n, m, 1.0);
  // Device ids per (type, slot): the listed devices, or placeholders for simulation.
  std::vector<std::vector<DeviceId>> ids(m);
  for (int j = 0, global = 0; j < m; ++j) {
    const auto& listed = setup.types[j].devices;
    if (run_round) {
      HETSGD_CHECK(static_cast<int>(listed.size()) == inst.counts[j],
                   "enforcement: device type '" << inst.types[j] << "' lists " << listed.size()
                                                << " devices for count " << inst.counts[j]
                                                << "; running real jobs needs every device named");
    }
    for (int k = 0; k < inst.counts[j]; ++k, ++global) {
      ids[j].push_back(k < static_cast<int>(listed.size()) ? listed[k] : DeviceId::cpu(global));
    }
  }

  DeficitScheduler scheduler(inst.counts, options.round_seconds);
  ThroughputTracker tracker(inst.s, options.ema_weight, options.drift_threshold);
  EnforcementResult res;
  res.policy = policy;
  res.samples.assign(n, 0.0);
  std::vector<int> active_prev;
  std::vector<int> sched_index(n, -1);  // full index -> scheduler index

  for (int r = 0; r < options.rounds; ++r) {
    std::vector<int> active;
    for (int i = 0; i < n; ++i) {
      if (r >= arrive[i] && (leave[i] < 0 || r < leave[i])) active.push_back(i);
    }
    const bool changed = active != active_prev || r == 0;
    const bool drifted = run_round && tracker.needs_recompute();
    if (changed || drifted) {
      std::vector<std::string> names;
      Matrix x(static_cast<int>(active.size()), m);
      if (!active.empty()) {
        Instance now = sub_instance(inst, active);
        now.s = Matrix(static_cast<int>(active.size()), m);
        for (std::size_t a = 0; a < active.size(); ++a) {
          for (int j = 0; j < m; ++j)
            now.s(static_cast<int>(a), j) = tracker.estimate()(active[a], j);
        }
        const Allocation alloc = allocate(now, policy, options.policy_options);
        if (alloc.fallback) res.notes.push_back("round " + std::to_string(r) + ": " + alloc.note);
        x = alloc.x;
        names = now.tenants;
      }
      // Jobs cannot use types they cannot run on at all.
      std::vector<std::vector<int>> caps(active.size(), std::vector<int>(m, 0));
      for (std::size_t a = 0; a < active.size(); ++a) {
        for (int j = 0; j < m; ++j)
          caps[a][j] = tracker.estimate()(active[a], j) > 0 ? inst.counts[j] : 0;
      }
      scheduler.set_shares(names, x, caps);
      tracker.mark_recomputed();
      ++res.recomputes;
      if (drifted && !changed) {
        res.notes.push_back("round " + std::to_string(r) +
                            ": throughput drift, allocation recomputed");
      }
      std::fill(sched_index.begin(), sched_index.end(), -1);
      for (std::size_t a = 0; a < active.size(); ++a) sched_index[active[a]] = static_cast<int>(a);
      active_prev = active;
    }
    const RoundPlan plan = scheduler.next_round();
    res.moves += plan.moves;
    res.max_lag = std::max(res.max_lag, scheduler.max_lag());

    // Run (or simulate) every job holding devices.
    std::vector<double> done(active.size(), 0.0);
    std::vector<std::exception_ptr> errors(active.size());
    auto run_one = [&](std::size_t a) {
      const int i = active[a];
      std::vector<DeviceId> held;
      for (const auto& [j, slot] : plan.slots[a]) {
        DeviceId id = ids[j][slot];
        id.speed = std::clamp(id.speed * factor(i, j), 1e-6, 1.0);
        held.push_back(id);
      }
      if (held.empty()) return;
      try {
        if (run_round) {
          done[a] = run_round(i, held, options.round_seconds);
        } else {
          for (int j = 0; j < m; ++j)
            done[a] += plan.count[a][j] * inst.s(i, j) * options.round_seconds;
        }
      } catch (...) {
        errors[a] = std::current_exception();
      }
    };
    if (run_round && options.parallel && active.size() > 1) {
      std::vector<std::thread> threads;
      for (std::size_t a = 0; a < active.size(); ++a) threads.emplace_back(run_one, a);
      for (auto& t : threads) t.join();
    } else {
      for (std::size_t a = 0; a < active.size(); ++a) run_one(a);
    }
    for (const auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (std::size_t a = 0; a < active.size(); ++a) {
      const int i = active[a];
      res.samples[i] += done[a];
      if (run_round) tracker.observe(i, plan.count[a], done[a], options.round_seconds);
    }
    res.rounds = r + 1;
  }
  // Shares are reported for the tenants present at the end (the scheduler forgets the others);
  // rows of departed tenants stay 0 with their rounds_present.
  res.target = Matrix(n, m);
  res.realised = Matrix(n, m);
  res.rounds_present.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const int k = sched_index[i];
    if (k < 0) continue;
    res.rounds_present[i] = scheduler.rounds_present(k);
    if (res.rounds_present[i] == 0) continue;
    for (int j = 0; j < m; ++j) {
      const double denom = inst.counts[j] * options.round_seconds * res.rounds_present[i];
      res.target(i, j) = scheduler.owed(k, j) / denom;
      res.realised(i, j) = scheduler.got(k, j) / denom;
    }
  }
  res.throughput_estimate = tracker.estimate();
  return res;
}

}  // namespace hetsgd::tenancy
