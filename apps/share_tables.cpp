#include "apps/share_tables.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>

namespace hetsgd::app {

void print_enforcement(const tenancy::EnforcementResult& r, const tenancy::Instance& inst,
                       double round_seconds, std::ostream& os) {
  const int n = inst.num_tenants(), m = inst.num_types();
  const auto flags = os.flags();
  const auto precision = os.precision();
  os << "\nenforced " << r.policy << " for " << r.rounds << " rounds of " << round_seconds
     << " s (max lag " << std::fixed << std::setprecision(2) << r.max_lag << " device-rounds, "
     << r.moves << " moves, " << r.recomputes << " allocations)"
     << (inst.emulated ? "  [per-tenant speeds EMULATED]" : "") << '\n';
  os << "events:\n";
  for (const auto& e : r.events) {
    os << "  round " << std::setw(3) << e.round << "  " << std::left << std::setw(8)
       << tenancy::event_kind_name(e.kind) << std::right << ' ' << e.text << '\n';
  }
  // One row per (round, present tenant): per type, devices held, enforced target x, realised.
  std::size_t name_width = 6;
  for (const auto& t : inst.tenants) name_width = std::max(name_width, t.size());
  os << "round  " << std::left << std::setw(static_cast<int>(name_width)) << "tenant" << std::right;
  for (int j = 0; j < m; ++j) {
    os << "  | " << std::left << std::setw(22) << (inst.types[j] + ": held x realised")
       << std::right;
  }
  os << '\n';
  for (const auto& rec : r.round_log) {
    for (int i : rec.present) {
      os << std::setw(5) << rec.round << "  " << std::left
         << std::setw(static_cast<int>(name_width)) << inst.tenants[i] << std::right;
      for (int j = 0; j < m; ++j) {
        os << "  | " << std::setw(4) << static_cast<int>(rec.held(i, j)) << std::setprecision(3)
           << std::setw(8) << rec.target(i, j) << std::setw(9) << rec.realised(i, j) << ' ';
      }
      os << '\n';
    }
  }
  // Per tenant: the computed x (its last allocation), the average enforced target (x averaged
  // over the rounds it was present, after min_share), the realised share, and the bound one
  // device-round gives after those rounds.
  os << "shares after the run (target = x averaged over the rounds present; bound = 1 / (count x "
        "rounds present)):\n";
  for (int i = 0; i < n; ++i) {
    os << "  " << std::left << std::setw(static_cast<int>(name_width)) << inst.tenants[i]
       << std::right;
    const int present = r.rounds_present[i];
    if (r.failed_round[i] >= 0) {
      os << "  FAILED in round " << r.failed_round[i] << " after " << present << " rounds;";
    } else if (r.finished_round[i] >= 0) {
      os << "  finished in round " << r.finished_round[i] << " after " << present << " rounds;";
    } else if (r.departed_round[i] >= 0) {
      os << "  departed at round " << r.departed_round[i] << " after " << present << " rounds;";
    } else if (present == 0) {
      os << "  never present\n";
      continue;
    } else {
      os << "  present " << present << " rounds;";
    }
    os << ' ' << static_cast<long long>(std::llround(r.samples[i])) << " samples, " << r.updates[i]
       << " updates\n";
    for (int j = 0; j < m; ++j) {
      const double bound = 1.0 / (inst.counts[j] * std::max(1, present));
      const double gap = std::abs(r.realised(i, j) - r.target(i, j));
      os << "    " << std::left << std::setw(8) << inst.types[j] << std::right << " x "
         << std::setprecision(3) << std::setw(6) << r.last_x(i, j) << "  target " << std::setw(6)
         << r.target(i, j) << "  realised " << std::setw(6) << r.realised(i, j)
         << "  |realised - target| " << std::setprecision(4) << gap
         << (gap <= bound + 1e-9 ? " <= " : " >  ") << bound << '\n';
    }
  }
  os.flags(flags);
  os.precision(precision);
}

}  // namespace hetsgd::app
