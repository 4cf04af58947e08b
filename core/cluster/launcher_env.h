/// \file core/cluster/launcher_env.h
/// Whether a launcher (mpirun, mpiexec) started this process as one rank of a job, read
/// from the environment it sets, before any MPI call: a plain `hetsgd train` never initialises
/// MPI, so it behaves (and starts) exactly like a build without it.
#pragma once

namespace hetsgd {

/// The job's rank count the launcher announced (OMPI_COMM_WORLD_SIZE, PMI_SIZE), or 0
/// when no launcher started this process.
int launcher_world_size();
/// This process's rank as the launcher announced it (OMPI_COMM_WORLD_RANK, PMI_RANK), or -1.
int launcher_rank();

}  // namespace hetsgd
