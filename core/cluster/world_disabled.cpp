// world_cluster() in a build without MPI (HETSGD_MPI=OFF or MPI not found): a single process.
// Started by mpirun with several ranks, each would train alone and write the same files, so
// that is refused with the way out.
#include <cstdlib>
#include <string>

#include "core/cluster/cluster.h"
#include "core/cluster/launcher_env.h"
#include "core/error.h"

namespace hetsgd {

bool mpi_built() { return false; }

Cluster& world_cluster() {
  static const std::unique_ptr<Cluster> world = [] {
    const int ranks = launcher_world_size();
    if (ranks > 1) {
      throw Error("started as one of " + std::to_string(ranks) +
                  " ranks by mpirun, but this hetsgd was built without MPI: rebuild with "
                  "-DHETSGD_MPI=ON (Debian: apt-get install libopenmpi-dev openmpi-bin)");
    }
    return make_single_cluster();
  }();
  return *world;
}

void abort_job(int) {}

}  // namespace hetsgd
