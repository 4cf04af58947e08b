#include "core/cluster/launcher_env.h"

#include <cstdlib>

namespace hetsgd {

namespace {

// The first of `vars` that holds an integer in [lo, 2^20], else `none`.
int read_env_int(const char* const (&vars)[2], long lo, int none) {
  for (const char* var : vars) {
    const char* v = std::getenv(var);
    if (v == nullptr) continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && n >= lo && n <= 1 << 20) return static_cast<int>(n);
  }
  return none;
}

}  // namespace

// Open MPI's mpirun sets OMPI_COMM_WORLD_*, MPICH's Hydra PMI_*. A value that does not parse
// counts as no launcher.
int launcher_world_size() { return read_env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1, 0); }

int launcher_rank() { return read_env_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0, -1); }

}  // namespace hetsgd
