/// \file kernels/cuda/api.h
/// The link-time seam to the CUDA backend. Defined by the .cu files in CUDA builds and by
/// cuda_disabled.cpp otherwise, so algorithm code never needs `#ifdef`. Host-only header:
/// no CUDA type crosses it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device.h"
#include "kernels/cuda/replica_estimate.h"  // estimate_replica_bytes(), every build

namespace hetsgd::cuda {

/// Number of CUDA devices visible to this process; 0 in CPU builds or when the driver fails.
int device_count();

/// Name of GPU `ordinal` ("NVIDIA H200"); throws DeviceUnavailable if it does not exist.
std::string device_name(int ordinal);

/// Makes a CUDA-resident replica of `config` on GPU `ordinal`. Several virtual devices may share
/// one GPU. Throws DeviceUnavailable in CPU builds or when the ordinal does not exist, and
/// MemoryBudgetExceeded (core/memory_budget.h) when estimate_replica_bytes()
/// (kernels/cuda/replica_estimate.h) for a nominal
/// batch (kNominalBatchRows rows of 128 nonzeros) exceeds the GPU's free memory, before
/// anything is allocated.
std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options);
/// The batch the construction-time memory check assumes.
inline constexpr index_t kNominalBatchRows = 256;

/// A Communicator that merges replicas on the GPUs themselves when every device in `devices`
/// is a CUDA device of this process (emulated ones included: merges are never slowed by
/// emulation, so they go straight to the GPU replica behind it): a device-side weighted
/// sum over the virtual devices sharing a GPU, then NCCL (reduce / broadcast / all-reduce of
/// the pre-scaled per-GPU sums) across distinct GPUs. Host memory is touched only where the
/// interface asks for it (the average's destination, the broadcast's source).
/// Its centre store (make_centre_store) keeps the elastic centre in GPU memory.
/// Returns nullptr when that is not possible (an empty list, a CPU device, several
/// GPUs in a build without NCCL, a CPU build): the caller then uses the host communicator.
/// The returned object is bound to the GPUs of `devices`; calls must pass the same devices in
/// the same order. Name: "cuda-shared" (one GPU) or "nccl" (several).
std::unique_ptr<Communicator> make_cuda_communicator(const std::vector<Device*>& devices);

/// The cross-rank step of a run across processes (core/cluster/cross_rank_sum.h) on NCCL, when
/// every device in `devices` is a CUDA device of this process (emulated ones included) and
/// the build links NCCL: the rank's sums are staged in a buffer on the GPU of devices[0] and
/// added over the ranks by one ncclAllReduce (NcclNodeRank, bootstrapped over the Cluster).
/// The offer's key is that GPU's UUID. No offer (empty) otherwise, and always in builds
/// without CUDA or NCCL. Making the strategy is collective; the offer is not.
CrossRankOffer nccl_cross_rank_offer(const std::vector<Device*>& devices);

}  // namespace hetsgd::cuda
