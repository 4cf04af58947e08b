// Text output of `hetsgd share --run`: the per-round table of held devices, enforced targets
// and realised shares, the events, and the per-tenant summary (departed tenants shown as such).
#pragma once

#include <iosfwd>

#include "core/tenancy/instance.h"
#include "core/tenancy/share_runner.h"

namespace hetsgd::app {

/// Prints the enforcement run `r` of `inst` (rounds of `round_seconds`): a summary line, the
/// events, one row per (round, present tenant), and a final per-tenant block comparing the
/// realised shares with the computed x, the average target and the one-device-round bound.
void print_enforcement(const tenancy::EnforcementResult& r, const tenancy::Instance& inst,
                       double round_seconds, std::ostream& os);

}  // namespace hetsgd::app
