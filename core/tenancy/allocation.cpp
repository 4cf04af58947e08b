#include "core/tenancy/allocation.h"

#include <sstream>

#include "core/error.h"

namespace hetsgd::tenancy {

std::vector<std::string> policy_names() {
  return {"oef-coop", "oef-noncoop", "partial-allocation", "gavel", "nash", "equal"};
}

Allocation allocate(const Instance& inst, const std::string& policy, const PolicyOptions& options) {
  validate(inst);
  if (policy == "equal") return allocate_equal(inst);
  if (policy == "gavel") return allocate_gavel(inst);
  if (policy == "nash") return allocate_nash(inst);
  if (policy == "oef-coop") return allocate_oef_coop(inst);
  if (policy == "oef-noncoop") return allocate_oef_noncoop(inst, options.redistribute);
  if (policy == "partial-allocation")
    return allocate_partial_allocation(inst, options.redistribute);
  std::ostringstream known;
  for (const auto& name : policy_names()) known << (known.tellp() > 0 ? ", " : "") << name;
  throw InvalidArgument("unknown sharing policy '" + policy + "' (known: " + known.str() + ")");
}

}  // namespace hetsgd::tenancy
