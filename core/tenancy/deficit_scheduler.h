/// \file core/tenancy/deficit_scheduler.h
/// Enforcing fractional shares on whole devices (core/tenancy/README.md).
///
/// Time is cut into rounds of R seconds. For every (tenant i, type j) the scheduler keeps
/// owed_ij (device-seconds the share promises: += x_ij c_j R per round) and got_ij
/// (device-seconds received: += devices held * R). Each round, for each type, devices go one by
/// one to the tenant of highest priority owed - got - (devices already given this round) * R
/// whose job can use one more device, as long as that priority is positive; a device nobody is
/// owed stays idle (this keeps shares that leave capacity unassigned, e.g. oef-noncoop, exact).
/// With sum_i x_ij <= 1 this greedy keeps |owed_ij - got_ij| < R: the realised share never lags
/// or leads the target by one device-round or more.
///
/// Devices are whole and identified by slot (type, index); after the per-type counts are chosen,
/// a tenant keeps the slots it already held (up to its new count) before taking free ones, so
/// jobs are not moved needlessly. Tenants are identified by name: set_shares() with a new tenant
/// list keeps the counters of tenants that stay, starts newcomers at zero, and frees the
/// devices of those that left; the new shares apply from the next round on.
///
/// Not thread-safe; one scheduler per server, driven by one thread.
#pragma once

#include <string>
#include <vector>

#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// The devices each tenant holds during one round.
struct RoundPlan {
  int round = 0;                                        ///< 0-based round number
  std::vector<std::vector<int>> count;                  ///< [tenant][type] devices held this round
  std::vector<std::vector<std::pair<int, int>>> slots;  ///< [tenant] held (type, slot index)
  int moves = 0;  ///< slots whose holder changed since the previous round (idle counts as a holder)
};

/// Deficit-counter scheduler of whole devices (see file comment).
class DeficitScheduler {
 public:
  /// `counts[j]` devices of type j; rounds of `round_seconds` > 0.
  DeficitScheduler(std::vector<int> counts, double round_seconds);

  /// Installs shares `x` (n x m) for `tenants` from the next round on. `max_devices`, when not
  /// empty, is n x m: the most devices of type j tenant i's job can use (a job that cannot run on
  /// a type has 0); empty = no limit. Throws InvalidArgument on size mismatches, negative shares,
  /// column sums above 1 + 1e-6, or duplicate tenant names.
  void set_shares(const std::vector<std::string>& tenants, const Matrix& x,
                  const std::vector<std::vector<int>>& max_devices = {});

  /// Decides the next round's holdings and books it (owed and got both advance by one round).
  RoundPlan next_round();

  /// Current tenants, in the order of the last set_shares().
  const std::vector<std::string>& tenants() const { return tenants_; }
  /// Device-seconds owed to tenant i on type j so far (since its arrival).
  double owed(int i, int j) const { return owed_[i][j]; }
  /// Device-seconds tenant i has received on type j so far.
  double got(int i, int j) const { return got_[i][j]; }
  /// Rounds tenant i has been present for.
  int rounds_present(int i) const { return present_[i]; }
  /// Realised share got_ij / (c_j R rounds_present_i), n x m (0 for a tenant with no round yet).
  Matrix realised_shares() const;
  /// max over (i, j) of |owed_ij - got_ij| / R, in device-rounds, right now.
  double max_lag() const;
  /// The round length R in seconds.
  double round_seconds() const { return round_seconds_; }
  /// Device counts per type.
  const std::vector<int>& counts() const { return counts_; }

 private:
  std::vector<int> counts_;
  double round_seconds_;
  int round_ = 0;
  std::vector<std::string> tenants_;
  Matrix x_;
  std::vector<std::vector<int>> max_devices_;
  std::vector<std::vector<double>> owed_, got_;
  std::vector<int> present_;
  std::vector<std::vector<int>> owner_;  ///< [type][slot] -> tenant index or -1 (idle)
};

}  // namespace hetsgd::tenancy
