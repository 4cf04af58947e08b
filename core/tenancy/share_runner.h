/// \file core/tenancy/share_runner.h
/// Round-by-round enforcement of a sharing policy on one server (core/tenancy/README.md):
/// allocate with the policy, hand whole devices out with the DeficitScheduler each round, run
/// every present tenant's job on what it holds, refresh the throughput estimate (EMA, weight 0.5,
/// per (tenant, type), see throughput_tracker.h) from what the jobs achieved, and recompute the
/// allocation when a tenant arrives or leaves or the relative speeds drift past a threshold.
/// Shares below RunOptions::min_share are rounded to zero before enforcement (a share of 1e-8
/// would otherwise win a whole device for a round). Every round's holdings, targets and
/// realised shares, and every event (arrival, departure, a job finishing or failing, allocation,
/// fallback) are recorded. A tenant whose job finishes or fails leaves the share at the end of
/// that round, as if it had departed: its devices go to the others.
///
/// The runner does not train anything itself. Running a job is a hook, `RunRoundFn`, that the
/// application wires to the training engine; without a hook the runner simulates: a job
/// processes seconds * sum over held devices of s_ij samples (the instance's own matrix).
///
/// Emulation: a tenant's emulated speed factor for a type (jobs file, `emulated_speed`) is
/// passed to the hook as the held DeviceId's speed multiplied by that factor, so an engine that
/// honours DeviceId::speed (core/emulated_device.h) reproduces a tenant-specific slowdown. Every
/// result computed that way is emulation and is labelled so (Instance::emulated).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tenancy/allocation.h"
#include "core/tenancy/instance.h"
#include "core/tenancy/jobs_file.h"

namespace hetsgd::tenancy {

/// What a tenant's job did in one round, as its hook reports it.
struct TenantRound {
  double samples = 0.0;   ///< points trained this round
  long long updates = 0;  ///< optimiser steps (merged mini-batches) this round
  double seconds = 0.0;   ///< training seconds this round (evaluation excluded)
  /// The job reached its own end (epochs, rounds, target): the runner takes its devices back
  /// and gives them to the others from the next round on. Its samples of this round count, but
  /// are not read as a throughput observation (a job that ends mid-round is not slow).
  bool done = false;
};

/// Runs tenant `tenant`'s job (index in SharingSetup::instance) for `seconds` on `held` and
/// says what it trained and whether it is done. Called concurrently for different tenants (one
/// thread per tenant holding devices) when RunOptions::parallel is set; must be thread-safe
/// across tenants. An exception stops that tenant's job alone: the runner records it (event
/// `fail`, EnforcementResult::failure) and the other tenants go on.
using RunRoundFn =
    std::function<TenantRound(int tenant, const std::vector<DeviceId>& held, double seconds)>;

/// Everything the runner needs about a server and its tenants.
struct SharingSetup {
  Instance instance;                  ///< every tenant that is ever present
  std::vector<DeviceTypeSpec> types;  ///< per type of the instance, its devices (may be empty)
  std::vector<int> arrive_round;      ///< per tenant, first round present (default 0)
  std::vector<int> leave_round;       ///< per tenant, first round gone (-1 = never)
  Matrix speed_factor;                ///< n x m emulated per-tenant factors (1 = none)
};

/// A setup where all tenants are always present and devices are known by count only.
SharingSetup make_setup(const Instance& inst);
/// A setup from a jobs file (see make_instance() for `profile` and `present`).
SharingSetup make_setup(const JobsFile& file, const ProfileFn& profile = nullptr,
                        const std::vector<DeviceId>& present = {});

/// Options of run_enforcement().
struct RunOptions {
  int rounds = 100;              ///< number of rounds T
  double round_seconds = 10.0;   ///< round length R
  PolicyOptions policy_options;  ///< passed to allocate()
  double ema_weight = 0.5;       ///< weight of a new throughput observation
  double drift_threshold = 0.2;  ///< recompute when the estimate moved more than this (relative)
  bool parallel = true;          ///< run tenants' rounds on concurrent threads
  double min_share = 1e-3;       ///< shares x_ij below this are enforced as 0
  /// When set and true, no further round starts (the result covers the rounds run so far;
  /// the jobs end their current round at a batch boundary through their own stop flag).
  const std::atomic<bool>* stop = nullptr;
};

/// One thing that happened during enforcement.
struct EnforcementEvent {
  /// What happened.
  enum class Kind { kArrive, kLeave, kFinish, kFail, kAllocate, kFallback, kStop };
  int round = 0;  ///< the round it takes effect in (0-based)
  Kind kind = Kind::kAllocate;
  int tenant = -1;   ///< the tenant concerned (index in the instance), -1 for none
  std::string text;  ///< human-readable detail (the reason for an allocation, a note)
};

/// Name of an event kind: "arrive", "leave", "finish", "fail", "allocate", "fallback", "stop"
/// (every tenant has left or ended, so the run ends before RunOptions::rounds).
const char* event_kind_name(EnforcementEvent::Kind kind);

/// The state after one round (full instance indices; rows of absent tenants are 0).
struct RoundRecord {
  int round = 0;             ///< 0-based round number
  std::vector<int> present;  ///< tenants present this round
  Matrix held;               ///< n x m devices held this round
  Matrix target;             ///< n x m enforced shares x this round (after min_share)
  Matrix realised;           ///< n x m got / (c_j R rounds present) so far
  Matrix average_target;     ///< n x m owed / (c_j R rounds present) so far
  int moves = 0;             ///< device hand-overs this round
};

/// What happened over the rounds.
struct EnforcementResult {
  std::string policy;  ///< policy used
  int rounds = 0;      ///< rounds run
  Matrix target;       ///< n x m: owed / (c_j R rounds present), the average target (at departure
                       ///< for tenants that left)
  Matrix realised;     ///< n x m: got / (c_j R rounds present), what was delivered
  std::vector<int> rounds_present;    ///< per tenant
  double max_lag = 0.0;               ///< max over rounds and (i, j) of |owed - got|, device-rounds
  int moves = 0;                      ///< total device hand-overs
  int recomputes = 0;                 ///< allocations computed (including the first)
  std::vector<double> samples;        ///< per tenant, samples processed
  std::vector<long long> updates;     ///< per tenant, optimiser steps its hook reported
  std::vector<double> train_seconds;  ///< per tenant, training seconds its hook reported
  Matrix throughput_estimate;         ///< final EMA estimate of s (n x m)
  std::vector<std::string> notes;     ///< fallbacks and drift recomputes, as text, in order
  std::vector<EnforcementEvent> events;  ///< every event, in order
  std::vector<RoundRecord> round_log;    ///< one record per round
  /// Per tenant: the round it left in (its target and realised rows are frozen at that point),
  /// or -1 when present at the end or never arrived.
  std::vector<int> departed_round;
  /// Per tenant: the round its job reported done in (its devices go to the others from the next
  /// round), or -1.
  std::vector<int> finished_round;
  /// Per tenant: the round its job threw in (it stops there, alone), or -1.
  std::vector<int> failed_round;
  /// Per tenant: the error of its failed job ("" when it did not fail).
  std::vector<std::string> failure;
  /// True when some tenant's job failed.
  bool any_failed() const;
  /// n x m: per tenant, its row of the last allocation it was part of (as computed, before
  /// min_share); 0 for tenants never present.
  Matrix last_x;
};

/// Runs `options.rounds` rounds of `policy` on `setup`; `run_round` executes a job's round
/// (null: simulate from the instance's throughput). With a hook, every type must list its
/// devices (InvalidArgument otherwise). Without devices listed, placeholder ids cpu:<slot> are
/// used, for simulation only.
EnforcementResult run_enforcement(const SharingSetup& setup, const std::string& policy,
                                  const RunOptions& options, const RunRoundFn& run_round = nullptr);

}  // namespace hetsgd::tenancy
