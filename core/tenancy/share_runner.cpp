#include "core/tenancy/share_runner.h"

#include <algorithm>
#include <exception>
#include <iomanip>
#include <sstream>
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

const char* event_kind_name(EnforcementEvent::Kind kind) {
  switch (kind) {
    case EnforcementEvent::Kind::kArrive:
      return "arrive";
    case EnforcementEvent::Kind::kLeave:
      return "leave";
    case EnforcementEvent::Kind::kAllocate:
      return "allocate";
    case EnforcementEvent::Kind::kFallback:
      return "fallback";
  }
  return "?";
}

EnforcementResult run_enforcement(const SharingSetup& setup, const std::string& policy,
                                  const RunOptions& options, const RunRoundFn& run_round) {
  const Instance& inst = setup.instance;
  validate(inst);
  const int n = inst.num_tenants(), m = inst.num_types();
  HETSGD_CHECK(options.rounds >= 0, "enforcement: rounds " << options.rounds << " < 0");
  HETSGD_CHECK(options.min_share >= 0 && options.min_share < 1,
               "enforcement: min_share " << options.min_share << " outside [0, 1)");
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
  res.target = Matrix(n, m);
  res.realised = Matrix(n, m);
  res.rounds_present.assign(n, 0);
  res.departed_round.assign(n, -1);
  res.last_x = Matrix(n, m);
  std::vector<int> active_prev;
  std::vector<int> sched_index(n, -1);  // full index -> scheduler index
  Matrix enforced(n, m);                // the shares in force, full indices
  auto add_event = [&](int round, EnforcementEvent::Kind kind, int tenant, std::string text) {
    res.events.push_back({round, kind, tenant, std::move(text)});
  };
  // Tenant i's averages so far, read from the scheduler (its index k there).
  auto read_shares = [&](int i, int k, Matrix* target, Matrix* realised) {
    const int present = scheduler.rounds_present(k);
    for (int j = 0; j < m; ++j) {
      const double denom = inst.counts[j] * options.round_seconds * std::max(1, present);
      (*target)(i, j) = present > 0 ? scheduler.owed(k, j) / denom : 0.0;
      (*realised)(i, j) = present > 0 ? scheduler.got(k, j) / denom : 0.0;
    }
  };

  for (int r = 0; r < options.rounds; ++r) {
    if (options.stop != nullptr && options.stop->load()) break;
    std::vector<int> active;
    for (int i = 0; i < n; ++i) {
      if (r >= arrive[i] && (leave[i] < 0 || r < leave[i])) active.push_back(i);
    }
    const bool changed = active != active_prev || r == 0;
    const bool drifted = run_round && tracker.needs_recompute();
    if (changed) {
      for (int i : active) {
        if (std::find(active_prev.begin(), active_prev.end(), i) == active_prev.end()) {
          add_event(r, EnforcementEvent::Kind::kArrive, i, inst.tenants[i] + " arrives");
        }
      }
      for (int i : active_prev) {
        if (std::find(active.begin(), active.end(), i) != active.end()) continue;
        // The scheduler forgets a tenant that leaves: freeze its shares first.
        read_shares(i, sched_index[i], &res.target, &res.realised);
        res.rounds_present[i] = scheduler.rounds_present(sched_index[i]);
        res.departed_round[i] = r;
        add_event(r, EnforcementEvent::Kind::kLeave, i, inst.tenants[i] + " leaves");
      }
    }
    if (changed || drifted) {
      const double drift = tracker.drift();
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
        if (alloc.fallback) {
          res.notes.push_back("round " + std::to_string(r) + ": " + alloc.note);
          add_event(r, EnforcementEvent::Kind::kFallback, -1, alloc.note);
        }
        x = alloc.x;
        names = now.tenants;
      }
      enforced = Matrix(n, m);
      for (std::size_t a = 0; a < active.size(); ++a) {
        for (int j = 0; j < m; ++j) {
          double& share = x(static_cast<int>(a), j);
          res.last_x(active[a], j) = share;
          // Solver dust or a sliver of Partial Allocation is not worth a whole device-round.
          if (share < options.min_share) share = 0.0;
          enforced(active[a], j) = share;
        }
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
      std::string why = r == 0 ? "start" : changed ? "tenants changed" : "";
      if (drifted) {
        std::ostringstream os;
        os << (why.empty() ? "" : ", ") << "relative speeds drifted by " << std::setprecision(3)
           << drift;
        why += os.str();
        if (!changed) {
          res.notes.push_back("round " + std::to_string(r) + ": " + os.str() +
                              ", allocation recomputed");
        }
      }
      add_event(r, EnforcementEvent::Kind::kAllocate, -1,
                policy + " for " + std::to_string(active.size()) + " tenants (" + why + ")");
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
    RoundRecord rec;
    rec.round = r;
    rec.present = active;
    rec.held = Matrix(n, m);
    rec.target = enforced;
    rec.realised = Matrix(n, m);
    rec.average_target = Matrix(n, m);
    rec.moves = plan.moves;
    for (std::size_t a = 0; a < active.size(); ++a) {
      const int i = active[a];
      res.samples[i] += done[a];
      if (run_round) tracker.observe(i, plan.count[a], done[a], options.round_seconds);
      for (int j = 0; j < m; ++j) rec.held(i, j) = plan.count[a][j];
      read_shares(i, static_cast<int>(a), &rec.average_target, &rec.realised);
    }
    res.round_log.push_back(std::move(rec));
    res.rounds = r + 1;
  }
  // Tenants present at the end; those that left were frozen when they did.
  for (int i = 0; i < n; ++i) {
    const int k = sched_index[i];
    if (k < 0) continue;
    res.rounds_present[i] = scheduler.rounds_present(k);
    read_shares(i, k, &res.target, &res.realised);
  }
  res.throughput_estimate = tracker.estimate();
  return res;
}

}  // namespace hetsgd::tenancy
