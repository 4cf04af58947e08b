#include "apps/memory_estimate.h"

#include <cstdio>

namespace hetsgd::app {
namespace {

std::string gigabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

}  // namespace

std::string describe(const MemoryEstimate& m) {
  std::string s = "model " + gigabytes(m.model) + ", optimiser " + gigabytes(m.optimizer) +
                  ", buffers " + gigabytes(m.buffers) + " (host " + gigabytes(m.host()) + ")";
  if (m.gpu > 0) s += ", GPU " + gigabytes(m.gpu);
  return s;
}

}  // namespace hetsgd::app
