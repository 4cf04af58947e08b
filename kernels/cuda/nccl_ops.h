/// \file kernels/cuda/nccl_ops.h
/// The NCCL collectives of the GPU communicator, behind a link-time seam: nccl_ops.cu defines
/// them in builds with NCCL, nccl_disabled.cpp (which refuses them) otherwise, so the
/// communicator has no `#if`. Included only by kernels/cuda/ sources; it names cudaStream_t but
/// no NCCL type, so it compiles with g++ and nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/types.h"

struct ncclComm;  // opaque NCCL communicator (ncclComm_t is `ncclComm*`)

namespace hetsgd::cuda {

/// Whether this build links NCCL (collectives across distinct GPUs).
bool nccl_built();

/// One NCCL communicator per GPU of this process (ncclCommInitAll): rank r is gpus[r]. Every
/// collective takes one buffer and one stream per rank (each on its rank's GPU), enqueues on
/// those streams inside one NCCL group and returns without synchronising.
class NcclGroup {
 public:
  /// Initialises the communicators. Throws NcclError when NCCL fails, DeviceUnavailable in a
  /// build without NCCL.
  explicit NcclGroup(const std::vector<int>& gpus);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  /// In place: bufs[0] = sum over ranks of bufs[r] (n floats each).
  void reduce_sum(const std::vector<float*>& bufs, index_t n,
                  const std::vector<cudaStream_t>& streams);
  /// In place: bufs[r] = bufs[0] for every rank.
  void broadcast(const std::vector<float*>& bufs, index_t n,
                 const std::vector<cudaStream_t>& streams);
  /// In place: bufs[r] = sum over ranks for every rank.
  void allreduce_sum(const std::vector<float*>& bufs, index_t n,
                     const std::vector<cudaStream_t>& streams);

 private:
  std::vector<int> gpus_;
  std::vector<ncclComm*> comms_;
};

/// Bytes of an NCCL unique id (NCCL_UNIQUE_ID_BYTES; nccl_ops.cu checks it against nccl.h).
inline constexpr std::size_t kNcclIdBytes = 128;

/// One GPU of this process as one rank of an NCCL communicator spanning the ranks of a Cluster
/// (one GPU per server process, core/cluster/README.md): rank 0 makes the unique id, the Cluster
/// (MPI) broadcasts it, and every rank joins with ncclCommInitRank. Collective over `cluster`.
/// Compiled and linked in every CUDA build; it runs only where GPUs exist.
class NcclNodeRank {
 public:
  /// Joins as cluster.rank() of cluster.size() on `gpu`. Throws NcclError when NCCL fails,
  /// DeviceUnavailable in a build without NCCL.
  NcclNodeRank(Cluster& cluster, int gpu);
  ~NcclNodeRank();
  NcclNodeRank(const NcclNodeRank&) = delete;
  NcclNodeRank& operator=(const NcclNodeRank&) = delete;

  /// In place on every rank: buf = sum over ranks (n floats on this rank's GPU, on `stream`).
  void allreduce_sum(float* buf, index_t n, cudaStream_t stream);

 private:
  int gpu_;
  ncclComm* comm_ = nullptr;
};

}  // namespace hetsgd::cuda
