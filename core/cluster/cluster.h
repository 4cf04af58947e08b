/// \file core/cluster/cluster.h
/// The processes (ranks) of one training job across servers (core/cluster/README.md), behind a
/// link-time seam: world_mpi.cpp implements world_cluster() with Open MPI in builds with MPI
/// (HETSGD_MPI), world_disabled.cpp with a single process otherwise, so engine code has no
/// `#if`. make_single_cluster() exists in every build (one process, no MPI calls).
///
/// A Cluster is the host-side transport only: small collectives, a broadcast, and shared
/// counters for the global batch cursor. What is reduced and when is the engine's
/// (core/engine/node_group.h). Each rank is one node with its own devices.
///
/// Threads: collectives (everything but fetch_add) are called from one thread per rank (the
/// scheduler), in the same order on every rank, while the workers are idle. fetch_add() may be
/// called from any thread at any time. Every call throws hetsgd::Error when the transport
/// fails; Debian's Open MPI 4.1 has no ULFM, so a lost rank usually ends the whole job first
/// (mpirun tears it down).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/types.h"

namespace hetsgd {

/// The shared counters every cluster holds (on rank 0 for MPI).
enum class SharedCounter : int {
  /// Absolute position in the stream of shuffled epochs: BatchSource's global cursor, and the
  /// round's quota counted on it (a batch is one fetch_add on it).
  kCursor = 0,
};
/// Number of SharedCounter values.
inline constexpr int kSharedCounters = 1;

/// Cluster::gather_to_root() did not move the bytes because rank 0 cannot hold them; thrown on
/// every rank alike, after the same collectives, so the ranks may go on together.
struct GatherRefused : Error {
  using Error::Error;
};

/// The ranks of one job.
class Cluster {
 public:
  virtual ~Cluster() = default;

  /// This process's rank in [0, size()).
  virtual int rank() const = 0;
  /// Number of ranks (1 for a single process).
  virtual int size() const = 0;
  /// Rank 0 reads, evaluates, logs and writes; the others train and stay quiet.
  bool is_root() const { return rank() == 0; }
  /// "single" or "mpi" (reports).
  virtual const char* name() const = 0;

  /// In place on every rank: data[k] = sum over ranks of data[k] (`n` values).
  virtual void allreduce_sum(float* data, index_t n) = 0;
  virtual void allreduce_sum(double* data, index_t n) = 0;
  virtual void allreduce_sum(std::int64_t* data, index_t n) = 0;
  /// In place on every rank: data[k] = max over ranks of data[k].
  virtual void allreduce_max(std::int64_t* data, index_t n) = 0;
  /// Copies `bytes` bytes at `data` from rank `root` to every other rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// Every rank's `mine`, in rank order, on every rank (small strings: counts are `int`).
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  /// Every rank's `mine`, in rank order, on rank 0; an empty vector on the others. The 64-bit
  /// sizes travel first, then each rank's bytes in chunks of at most rank 0's bound
  /// (core/cluster/gather_chunks.h), so any size works. Throws GatherRefused on every rank
  /// when rank 0 has no memory for the total (no bytes moved); any other Error is a failed
  /// transport, after which the ranks cannot be assumed to agree.
  virtual std::vector<std::string> gather_to_root(const std::string& mine) = 0;
  /// Chunks this rank has received (rank 0) or sent (the others) in gather_to_root() so far.
  virtual std::int64_t gathered_chunks() const { return 0; }
  /// Waits for every rank.
  virtual void barrier() = 0;

  /// Atomically adds `delta` to `counter` and returns its value before (thread-safe, one-sided:
  /// the other ranks need not take part). Counters start at 0.
  virtual std::int64_t fetch_add(SharedCounter counter, std::int64_t delta) = 0;
};

/// One process alone: collectives are identities, counters are local atomics.
std::unique_ptr<Cluster> make_single_cluster();

/// The job this process belongs to, made at the first call: with MPI built in and the process
/// started by mpirun (or mpiexec), the MPI world, initialised here and
/// finalised at exit; else a single process. Throws Error when mpirun started several ranks of
/// a build without MPI (they would train independently). Call from the main thread first.
Cluster& world_cluster();

/// Ends every rank of the job with `code` after a fatal error on this one (MPI_Abort), so that
/// no rank waits for it in a collective. A single process just returns.
void abort_job(int code);

/// True when this build links MPI (HETSGD_MPI).
bool mpi_built();

}  // namespace hetsgd
