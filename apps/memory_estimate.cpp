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

std::string describe(const MemoryEstimate& m, std::uint64_t data_bytes) {
  std::string s = "model " + gigabytes(m.model) + ", optimiser " + gigabytes(m.optimizer) +
                  ", buffers " + gigabytes(m.buffers) + " (host " + gigabytes(m.host()) + ")";
  if (m.gpu > 0) s += ", GPU " + gigabytes(m.gpu);
  if (data_bytes > 0) {
    s +=
        "; with the loaded data " + gigabytes(data_bytes) + ": " + gigabytes(m.host() + data_bytes);
  }
  return s;
}

std::uint64_t dataset_bytes(const Dataset& d) {
  return d.x_indptr.size() * sizeof(index_t) + d.y_indptr.size() * sizeof(index_t) +
         d.x_indices.size() * sizeof(col_t) + d.x_values.size() * sizeof(float) +
         d.y_indices.size() * sizeof(col_t);
}

}  // namespace hetsgd::app
