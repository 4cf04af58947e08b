#include "core/tenancy/deficit_scheduler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace hetsgd::tenancy {

DeficitScheduler::DeficitScheduler(std::vector<int> counts, double round_seconds)
    : counts_(std::move(counts)), round_seconds_(round_seconds) {
  HETSGD_CHECK(!counts_.empty(), "deficit scheduler: no device types");
  for (std::size_t j = 0; j < counts_.size(); ++j) {
    HETSGD_CHECK(counts_[j] >= 1, "deficit scheduler: type " << j << " has count " << counts_[j]);
  }
  HETSGD_CHECK(round_seconds_ > 0 && std::isfinite(round_seconds_),
               "deficit scheduler: round length " << round_seconds_ << " s must be > 0");
  for (int c : counts_) owner_.emplace_back(c, -1);
  x_ = Matrix(0, static_cast<int>(counts_.size()));
}

void DeficitScheduler::set_shares(const std::vector<std::string>& tenants, const Matrix& x,
                                  const std::vector<std::vector<int>>& max_devices) {
  const int n = static_cast<int>(tenants.size());
  const int m = static_cast<int>(counts_.size());
  HETSGD_CHECK(x.rows == n && x.cols == m, "deficit scheduler: shares are "
                                               << x.rows << " x " << x.cols << ", expected " << n
                                               << " x " << m);
  HETSGD_CHECK(max_devices.empty() || static_cast<int>(max_devices.size()) == n,
               "deficit scheduler: max_devices has " << max_devices.size() << " rows for " << n
                                                     << " tenants");
  std::set<std::string> seen;
  for (const auto& t : tenants) {
    HETSGD_CHECK(seen.insert(t).second, "deficit scheduler: tenant '" << t << "' appears twice");
  }
  for (int j = 0; j < m; ++j) {
    double col = 0;
    for (int i = 0; i < n; ++i) {
      HETSGD_CHECK(x(i, j) >= 0 && std::isfinite(x(i, j)), "deficit scheduler: share of tenant '"
                                                               << tenants[i] << "' on type " << j
                                                               << " is " << x(i, j));
      col += x(i, j);
    }
    HETSGD_CHECK(col <= 1.0 + 1e-6,
                 "deficit scheduler: shares of type " << j << " sum to " << col << " > 1");
  }
  // Carry counters and held slots over by tenant name.
  std::vector<std::vector<double>> owed(n, std::vector<double>(m, 0.0)), got = owed;
  std::vector<int> present(n, 0);
  std::vector<int> old_to_new(tenants_.size(), -1);
  for (int i = 0; i < n; ++i) {
    for (std::size_t o = 0; o < tenants_.size(); ++o) {
      if (tenants_[o] == tenants[i]) {
        owed[i] = owed_[o];
        got[i] = got_[o];
        present[i] = present_[o];
        old_to_new[o] = i;
      }
    }
  }
  for (auto& slots : owner_) {
    for (int& o : slots) o = o < 0 ? -1 : old_to_new[o];
  }
  tenants_ = tenants;
  x_ = x;
  owed_ = std::move(owed);
  got_ = std::move(got);
  present_ = std::move(present);
  max_devices_.assign(n, std::vector<int>(m, 0));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) {
      int cap = counts_[j];
      if (!max_devices.empty()) {
        HETSGD_CHECK(static_cast<int>(max_devices[i].size()) == m,
                     "deficit scheduler: max_devices row of '"
                         << tenants[i] << "' has " << max_devices[i].size() << " types");
        cap = std::clamp(max_devices[i][j], 0, counts_[j]);
      }
      max_devices_[i][j] = cap;
    }
  }
}

RoundPlan DeficitScheduler::next_round() {
  const int n = static_cast<int>(tenants_.size());
  const int m = static_cast<int>(counts_.size());
  const double r = round_seconds_;
  // Priorities are compared against a small positive threshold so that float dust in shares
  // summing to exactly 1 never hands out a device nobody is owed.
  const double eps = 1e-9 * r;
  RoundPlan plan;
  plan.round = round_;
  plan.count.assign(n, std::vector<int>(m, 0));
  plan.slots.assign(n, {});
  for (int i = 0; i < n; ++i) {
    ++present_[i];
    for (int j = 0; j < m; ++j) owed_[i][j] += x_(i, j) * counts_[j] * r;
  }
  for (int j = 0; j < m; ++j) {
    std::vector<int> held_before(n, 0);
    for (int o : owner_[j]) {
      if (o >= 0) ++held_before[o];
    }
    for (int d = 0; d < counts_[j]; ++d) {
      int best = -1;
      double best_pr = eps;
      for (int i = 0; i < n; ++i) {
        if (plan.count[i][j] >= max_devices_[i][j]) continue;
        const double pr = owed_[i][j] - got_[i][j] - plan.count[i][j] * r;
        // Ties (within eps) go to a tenant that held more devices of this type last round:
        // no needless moves.
        const bool sticky_tie =
            best >= 0 && std::abs(pr - best_pr) <= eps &&
            held_before[i] - plan.count[i][j] > held_before[best] - plan.count[best][j];
        if (pr > best_pr + eps || (pr > eps && best < 0) || sticky_tie) {
          best = i;
          best_pr = pr;
        }
      }
      if (best < 0) break;
      ++plan.count[best][j];
    }
    // A tenant still owed time it cannot use (its job is at its own device limit, below the
    // type's count) is not allowed to bank it: forgive the excess so it cannot later crowd others
    // out. Holding every device of the type is no such limit: the time it is still owed is
    // delivered in later rounds, when others' priorities are lower.
    for (int i = 0; i < n; ++i) {
      if (max_devices_[i][j] < counts_[j] && plan.count[i][j] >= max_devices_[i][j]) {
        const double pr = owed_[i][j] - got_[i][j] - plan.count[i][j] * r;
        if (pr > 0) owed_[i][j] -= pr;
      }
    }
    // Map counts to slots: keep what is held, then fill from free slots in index order.
    std::vector<int> next(counts_[j], -1);
    std::vector<int> need = std::vector<int>(n, 0);
    for (int i = 0; i < n; ++i) need[i] = plan.count[i][j];
    for (int s = 0; s < counts_[j]; ++s) {
      const int o = owner_[j][s];
      if (o >= 0 && need[o] > 0) {
        next[s] = o;
        --need[o];
      }
    }
    for (int i = 0, s = 0; i < n; ++i) {
      while (need[i] > 0) {
        while (next[s] >= 0) ++s;
        next[s] = i;
        --need[i];
      }
    }
    for (int s = 0; s < counts_[j]; ++s) {
      if (next[s] != owner_[j][s]) ++plan.moves;
      if (next[s] >= 0) plan.slots[next[s]].emplace_back(j, s);
    }
    owner_[j] = next;
    for (int i = 0; i < n; ++i) got_[i][j] += plan.count[i][j] * r;
  }
  ++round_;
  return plan;
}

Matrix DeficitScheduler::realised_shares() const {
  const int n = static_cast<int>(tenants_.size());
  const int m = static_cast<int>(counts_.size());
  Matrix out(n, m);
  for (int i = 0; i < n; ++i) {
    if (present_[i] == 0) continue;
    for (int j = 0; j < m; ++j)
      out(i, j) = got_[i][j] / (counts_[j] * round_seconds_ * present_[i]);
  }
  return out;
}

double DeficitScheduler::max_lag() const {
  double lag = 0;
  for (std::size_t i = 0; i < owed_.size(); ++i) {
    for (std::size_t j = 0; j < counts_.size(); ++j) {
      lag = std::max(lag, std::abs(owed_[i][j] - got_[i][j]) / round_seconds_);
    }
  }
  return lag;
}

}  // namespace hetsgd::tenancy
