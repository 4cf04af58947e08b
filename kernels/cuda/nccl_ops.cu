// NCCL collectives across the distinct GPUs of one process (built only with NCCL).
#include <nccl.h>

#include "core/error.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device_guard.cuh"
#include "kernels/cuda/nccl_ops.h"

namespace hetsgd::cuda {
namespace {

void check_ranks(size_t ranks, const std::vector<float*>& bufs,
                 const std::vector<cudaStream_t>& streams) {
  HETSGD_CHECK(bufs.size() == ranks && streams.size() == ranks,
               "NCCL group of " << ranks << " ranks called with " << bufs.size() << " buffers and "
                                << streams.size() << " streams");
}

}  // namespace

bool nccl_built() { return true; }

NcclGroup::NcclGroup(const std::vector<int>& gpus) : gpus_(gpus), comms_(gpus.size(), nullptr) {
  HETSGD_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(gpus_.size()), gpus_.data()));
}

NcclGroup::~NcclGroup() {
  for (ncclComm_t c : comms_) {
    if (c != nullptr) HETSGD_NCCL_CHECK_NOTHROW(ncclCommDestroy(c));
  }
}

// Each call is one NCCL group over every rank, so the single thread that drives all GPUs
// cannot deadlock on the first rank's collective waiting for the others.
void NcclGroup::reduce_sum(const std::vector<float*>& bufs, index_t n,
                           const std::vector<cudaStream_t>& streams) {
  check_ranks(comms_.size(), bufs, streams);
  HETSGD_NCCL_CHECK(ncclGroupStart());
  for (size_t r = 0; r < comms_.size(); ++r) {
    DeviceGuard guard(gpus_[r]);
    HETSGD_NCCL_CHECK(ncclReduce(bufs[r], bufs[r], static_cast<size_t>(n), ncclFloat, ncclSum, 0,
                                 comms_[r], streams[r]));
  }
  HETSGD_NCCL_CHECK(ncclGroupEnd());
}

void NcclGroup::broadcast(const std::vector<float*>& bufs, index_t n,
                          const std::vector<cudaStream_t>& streams) {
  check_ranks(comms_.size(), bufs, streams);
  HETSGD_NCCL_CHECK(ncclGroupStart());
  for (size_t r = 0; r < comms_.size(); ++r) {
    DeviceGuard guard(gpus_[r]);
    HETSGD_NCCL_CHECK(ncclBroadcast(bufs[r], bufs[r], static_cast<size_t>(n), ncclFloat, 0,
                                    comms_[r], streams[r]));
  }
  HETSGD_NCCL_CHECK(ncclGroupEnd());
}

void NcclGroup::allreduce_sum(const std::vector<float*>& bufs, index_t n,
                              const std::vector<cudaStream_t>& streams) {
  check_ranks(comms_.size(), bufs, streams);
  HETSGD_NCCL_CHECK(ncclGroupStart());
  for (size_t r = 0; r < comms_.size(); ++r) {
    DeviceGuard guard(gpus_[r]);
    HETSGD_NCCL_CHECK(ncclAllReduce(bufs[r], bufs[r], static_cast<size_t>(n), ncclFloat, ncclSum,
                                    comms_[r], streams[r]));
  }
  HETSGD_NCCL_CHECK(ncclGroupEnd());
}

static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "NCCL unique id size changed");

NcclNodeRank::NcclNodeRank(Cluster& cluster, int gpu) : gpu_(gpu) {
  ncclUniqueId id{};
  if (cluster.is_root()) HETSGD_NCCL_CHECK(ncclGetUniqueId(&id));
  // The bootstrap: NCCL's own id travels over the job's host transport (MPI).
  cluster.broadcast(&id, sizeof id, 0);
  DeviceGuard guard(gpu_);
  HETSGD_NCCL_CHECK(ncclCommInitRank(&comm_, cluster.size(), id, cluster.rank()));
}

NcclNodeRank::~NcclNodeRank() {
  if (comm_ != nullptr) HETSGD_NCCL_CHECK_NOTHROW(ncclCommDestroy(comm_));
}

void NcclNodeRank::allreduce_sum(float* buf, index_t n, cudaStream_t stream) {
  DeviceGuard guard(gpu_);
  HETSGD_NCCL_CHECK(
      ncclAllReduce(buf, buf, static_cast<size_t>(n), ncclFloat, ncclSum, comm_, stream));
}

}  // namespace hetsgd::cuda
