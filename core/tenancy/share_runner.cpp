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

const char* event_kind_name(EnforcementEvent::Kind kind) {
  switch (kind) {
    case EnforcementEvent::Kind::kArrive:
      return "arrive";
    case EnforcementEvent::Kind::kLeave:
      return "leave";
    case EnforcementEvent::Kind::kFinish:
      return "finish";
    case EnforcementEvent::Kind::kFail:
      return "fail";
    case EnforcementEvent::Kind::kAllocate:
      return "allocate";
    case EnforcementEvent::Kind::kStop:
      return "stop";
    case EnforcementEvent::Kind::kFallback:
      return "fallback";
  }
  return "?";
}

bool EnforcementResult::any_failed() const {
  return std::any_of(failed_round.begin(), failed_round.end(), [](int r) { return r >= 0; });
}

namespace {

using Kind = EnforcementEvent::Kind;

const Instance& validated(const Instance& inst) {
  validate(inst);
  return inst;
}

// One enforcement run: the state that lives across rounds and one method per step of a round.
class Enforcer {
 public:
  Enforcer(const SharingSetup& setup, const std::string& policy, const RunOptions& options,
           const RunRoundFn& run_round)
      : setup_(setup),
        inst_(validated(setup.instance)),
        policy_(policy),
        opt_(options),
        hook_(run_round),
        n_(inst_.num_tenants()),
        m_(inst_.num_types()),
        scheduler_(inst_.counts, options.round_seconds),
        tracker_(inst_.s, options.ema_weight, options.drift_threshold) {
    check_setup();
    name_devices();
    start_result();
  }

  EnforcementResult run() {
    for (int r = 0; r < opt_.rounds; ++r) {
      if (opt_.stop != nullptr && opt_.stop->load()) break;
      if (r > 0 && nobody_left(r)) {
        add_event(r, Kind::kStop, -1, "every tenant has left or its job ended: the run stops");
        break;
      }
      const std::vector<int> active = present_in(r);
      const bool changed = active != active_prev_ || r == 0;
      const bool drifted = hook_ && tracker_.needs_recompute();
      if (changed) note_arrivals_and_departures(r, active);
      if (changed || drifted) reallocate(r, active, changed, drifted);
      const RoundPlan plan = scheduler_.next_round();
      res_.moves += plan.moves;
      res_.max_lag = std::max(res_.max_lag, scheduler_.max_lag());
      std::vector<TenantRound> done(active.size());
      std::vector<std::string> errors(active.size());
      run_jobs(active, plan, &done, &errors);
      record_round(r, active, plan, done, errors);
    }
    finish();
    return std::move(res_);
  }

 private:
  void check_setup() {
    HETSGD_CHECK(opt_.rounds >= 0, "enforcement: rounds " << opt_.rounds << " < 0");
    HETSGD_CHECK(opt_.min_share >= 0 && opt_.min_share < 1,
                 "enforcement: min_share " << opt_.min_share << " outside [0, 1)");
    HETSGD_CHECK(
        static_cast<int>(setup_.types.size()) == m_,
        "enforcement: " << setup_.types.size() << " device type specs for " << m_ << " types");
    arrive_ = setup_.arrive_round;
    leave_ = setup_.leave_round;
    arrive_.resize(n_, 0);
    leave_.resize(n_, -1);
    factor_ = setup_.speed_factor.rows == n_ ? setup_.speed_factor : Matrix(n_, m_, 1.0);
  }

  // Device ids per (type, slot): the listed devices, or placeholders for simulation.
  void name_devices() {
    ids_.resize(m_);
    for (int j = 0, global = 0; j < m_; ++j) {
      const auto& listed = setup_.types[j].devices;
      if (hook_) {
        HETSGD_CHECK(static_cast<int>(listed.size()) == inst_.counts[j],
                     "enforcement: device type '"
                         << inst_.types[j] << "' lists " << listed.size() << " devices for count "
                         << inst_.counts[j] << "; running real jobs needs every device named");
      }
      for (int k = 0; k < inst_.counts[j]; ++k, ++global) {
        ids_[j].push_back(k < static_cast<int>(listed.size()) ? listed[k] : DeviceId::cpu(global));
      }
    }
  }

  void start_result() {
    res_.policy = policy_;
    res_.samples.assign(n_, 0.0);
    res_.updates.assign(n_, 0);
    res_.train_seconds.assign(n_, 0.0);
    res_.target = Matrix(n_, m_);
    res_.realised = Matrix(n_, m_);
    res_.rounds_present.assign(n_, 0);
    res_.departed_round.assign(n_, -1);
    res_.finished_round.assign(n_, -1);
    res_.failed_round.assign(n_, -1);
    res_.failure.assign(n_, "");
    res_.last_x = Matrix(n_, m_);
    sched_index_.assign(n_, -1);
    enforced_ = Matrix(n_, m_);
  }

  void add_event(int round, Kind kind, int tenant, std::string text) {
    res_.events.push_back({round, kind, tenant, std::move(text)});
  }

  // Tenants in the share in round r: arrived, not yet left, and whose job neither finished nor
  // failed in an earlier round.
  std::vector<int> present_in(int r) const {
    std::vector<int> active;
    for (int i = 0; i < n_; ++i) {
      const bool ended = res_.finished_round[i] >= 0 || res_.failed_round[i] >= 0;
      if (r >= arrive_[i] && (leave_[i] < 0 || r < leave_[i]) && !ended) active.push_back(i);
    }
    return active;
  }

  // True when no tenant is present in round r or any later round.
  bool nobody_left(int r) const {
    for (int i = 0; i < n_; ++i) {
      const bool ended = res_.finished_round[i] >= 0 || res_.failed_round[i] >= 0;
      if (!ended && (leave_[i] < 0 || r < leave_[i])) return false;
    }
    return true;
  }

  // Tenant i's averages so far, read from the scheduler (its index k there).
  void read_shares(int i, int k, Matrix* target, Matrix* realised) const {
    const int present = scheduler_.rounds_present(k);
    for (int j = 0; j < m_; ++j) {
      const double denom = inst_.counts[j] * opt_.round_seconds * std::max(1, present);
      (*target)(i, j) = present > 0 ? scheduler_.owed(k, j) / denom : 0.0;
      (*realised)(i, j) = present > 0 ? scheduler_.got(k, j) / denom : 0.0;
    }
  }

  void note_arrivals_and_departures(int r, const std::vector<int>& active) {
    auto in = [](const std::vector<int>& v, int i) {
      return std::find(v.begin(), v.end(), i) != v.end();
    };
    for (int i : active) {
      if (!in(active_prev_, i)) add_event(r, Kind::kArrive, i, inst_.tenants[i] + " arrives");
    }
    for (int i : active_prev_) {
      if (in(active, i)) continue;
      // The scheduler forgets a tenant that goes: freeze its shares first.
      read_shares(i, sched_index_[i], &res_.target, &res_.realised);
      res_.rounds_present[i] = scheduler_.rounds_present(sched_index_[i]);
      if (res_.finished_round[i] >= 0 || res_.failed_round[i] >= 0) continue;  // already told
      res_.departed_round[i] = r;
      add_event(r, Kind::kLeave, i, inst_.tenants[i] + " leaves");
    }
  }

  // The policy's shares for the tenants present, on the tracker's current estimate.
  Matrix solve(int r, const std::vector<int>& active) {
    if (active.empty()) return Matrix(0, m_);
    Instance now = sub_instance(inst_, active);
    for (std::size_t a = 0; a < active.size(); ++a) {
      for (int j = 0; j < m_; ++j) {
        now.s(static_cast<int>(a), j) = tracker_.estimate()(active[a], j);
      }
    }
    const Allocation alloc = allocate(now, policy_, opt_.policy_options);
    if (alloc.fallback) {
      res_.notes.push_back("round " + std::to_string(r) + ": " + alloc.note);
      add_event(r, Kind::kFallback, -1, alloc.note);
    }
    return alloc.x;
  }

  void reallocate(int r, const std::vector<int>& active, bool changed, bool drifted) {
    const double drift = tracker_.drift();
    Matrix x = solve(r, active);
    enforced_ = Matrix(n_, m_);
    std::vector<std::string> names;
    // Jobs cannot use types they cannot run on at all.
    std::vector<std::vector<int>> caps(active.size(), std::vector<int>(m_, 0));
    for (std::size_t a = 0; a < active.size(); ++a) {
      const int i = active[a];
      names.push_back(inst_.tenants[i]);
      for (int j = 0; j < m_; ++j) {
        double& share = x(static_cast<int>(a), j);
        res_.last_x(i, j) = share;
        // Solver dust or a sliver of Partial Allocation is not worth a whole device-round.
        if (share < opt_.min_share) share = 0.0;
        enforced_(i, j) = share;
        caps[a][j] = tracker_.estimate()(i, j) > 0 ? inst_.counts[j] : 0;
      }
    }
    scheduler_.set_shares(names, x, caps);
    tracker_.mark_recomputed();
    ++res_.recomputes;
    explain(r, active.size(), changed, drifted, drift);
    std::fill(sched_index_.begin(), sched_index_.end(), -1);
    for (std::size_t a = 0; a < active.size(); ++a) sched_index_[active[a]] = static_cast<int>(a);
    active_prev_ = active;
  }

  void explain(int r, std::size_t tenants, bool changed, bool drifted, double drift) {
    std::string why = r == 0 ? "start" : changed ? "tenants changed" : "";
    if (drifted) {
      std::ostringstream os;
      os << (why.empty() ? "" : ", ") << "relative speeds drifted by " << std::setprecision(3)
         << drift;
      why += os.str();
      if (!changed) {
        res_.notes.push_back("round " + std::to_string(r) + ": " + os.str() +
                             ", allocation recomputed");
      }
    }
    add_event(r, Kind::kAllocate, -1,
              policy_ + " for " + std::to_string(tenants) + " tenants (" + why + ")");
  }

  // Runs (or simulates) tenant active[a]'s round on the devices the plan gives it; an error
  // is kept as text, for that tenant alone.
  void run_one(std::size_t a, int i, const RoundPlan& plan, TenantRound* out, std::string* error) {
    std::vector<DeviceId> held;
    for (const auto& [j, slot] : plan.slots[a]) {
      DeviceId id = ids_[j][slot];
      id.speed = std::clamp(id.speed * factor_(i, j), 1e-6, 1.0);
      held.push_back(id);
    }
    if (held.empty()) return;
    try {
      if (hook_) {
        *out = hook_(i, held, opt_.round_seconds);
        return;
      }
      for (int j = 0; j < m_; ++j) {
        out->samples += plan.count[a][j] * inst_.s(i, j) * opt_.round_seconds;
      }
      out->seconds = opt_.round_seconds;
    } catch (const std::exception& e) {
      *error = e.what();
    } catch (...) {
      *error = "unknown error";
    }
  }

  void run_jobs(const std::vector<int>& active, const RoundPlan& plan,
                std::vector<TenantRound>* done, std::vector<std::string>* errors) {
    auto one = [&](std::size_t a) { run_one(a, active[a], plan, &(*done)[a], &(*errors)[a]); };
    if (hook_ && opt_.parallel && active.size() > 1) {
      std::vector<std::thread> threads;
      for (std::size_t a = 0; a < active.size(); ++a) threads.emplace_back(one, a);
      for (auto& t : threads) t.join();
    } else {
      for (std::size_t a = 0; a < active.size(); ++a) one(a);
    }
  }

  // What tenant active[a]'s round says about its job: samples, a throughput observation, or the
  // end of the job (finished or failed; its devices are released from the next round on).
  void absorb(int r, std::size_t a, int i, const RoundPlan& plan, const TenantRound& done,
              const std::string& error) {
    res_.samples[i] += done.samples;
    res_.updates[i] += done.updates;
    res_.train_seconds[i] += done.seconds;
    if (!error.empty()) {
      res_.failed_round[i] = r;
      res_.failure[i] = error;
      add_event(r, Kind::kFail, i,
                inst_.tenants[i] + "'s job failed and stops; the others go on: " + error);
    } else if (done.done) {
      res_.finished_round[i] = r;
      add_event(r, Kind::kFinish, i,
                inst_.tenants[i] + "'s job finished; its devices go to the others");
    } else if (hook_) {
      tracker_.observe(i, plan.count[a], done.samples, opt_.round_seconds);
    }
  }

  void record_round(int r, const std::vector<int>& active, const RoundPlan& plan,
                    const std::vector<TenantRound>& done, const std::vector<std::string>& errors) {
    RoundRecord rec;
    rec.round = r;
    rec.present = active;
    rec.held = Matrix(n_, m_);
    rec.target = enforced_;
    rec.realised = Matrix(n_, m_);
    rec.average_target = Matrix(n_, m_);
    rec.moves = plan.moves;
    for (std::size_t a = 0; a < active.size(); ++a) {
      const int i = active[a];
      absorb(r, a, i, plan, done[a], errors[a]);
      for (int j = 0; j < m_; ++j) rec.held(i, j) = plan.count[a][j];
      read_shares(i, static_cast<int>(a), &rec.average_target, &rec.realised);
    }
    res_.round_log.push_back(std::move(rec));
    res_.rounds = r + 1;
  }

  // Tenants still in the scheduler at the end; those that went were frozen when they did.
  void finish() {
    for (int i = 0; i < n_; ++i) {
      const int k = sched_index_[i];
      if (k < 0) continue;
      res_.rounds_present[i] = scheduler_.rounds_present(k);
      read_shares(i, k, &res_.target, &res_.realised);
    }
    res_.throughput_estimate = tracker_.estimate();
  }

  const SharingSetup& setup_;
  const Instance& inst_;
  const std::string policy_;
  const RunOptions opt_;
  const RunRoundFn hook_;
  const int n_, m_;
  std::vector<int> arrive_, leave_;
  Matrix factor_;
  std::vector<std::vector<DeviceId>> ids_;
  DeficitScheduler scheduler_;
  ThroughputTracker tracker_;
  EnforcementResult res_;
  std::vector<int> active_prev_;
  std::vector<int> sched_index_;  // full index -> scheduler index
  Matrix enforced_;               // the shares in force, full indices
};

}  // namespace

EnforcementResult run_enforcement(const SharingSetup& setup, const std::string& policy,
                                  const RunOptions& options, const RunRoundFn& run_round) {
  return Enforcer(setup, policy, options, run_round).run();
}

}  // namespace hetsgd::tenancy
