// The NCCL seam in CUDA builds without NCCL: one GPU merges on the device, several are refused
// (make_cuda_communicator never builds a group here, so these throw only on misuse).
#include <string>

#include "core/error.h"
#include "kernels/cuda/nccl_ops.h"

namespace hetsgd::cuda {
namespace {

[[noreturn]] void refuse(size_t gpus) {
  throw DeviceUnavailable("merging replicas on " + std::to_string(gpus) +
                          " distinct GPUs needs NCCL, which this build lacks "
                          "(install libnccl-dev and configure with -DHETSGD_NCCL=ON)");
}

}  // namespace

bool nccl_built() { return false; }

NcclGroup::NcclGroup(const std::vector<int>& gpus) : gpus_(gpus) { refuse(gpus.size()); }

NcclGroup::~NcclGroup() = default;

void NcclGroup::reduce_sum(const std::vector<float*>&, index_t, const std::vector<cudaStream_t>&) {
  refuse(gpus_.size());
}

void NcclGroup::broadcast(const std::vector<float*>&, index_t, const std::vector<cudaStream_t>&) {
  refuse(gpus_.size());
}

void NcclGroup::allreduce_sum(const std::vector<float*>&, index_t,
                              const std::vector<cudaStream_t>&) {
  refuse(gpus_.size());
}

NcclNodeRank::NcclNodeRank(Cluster& cluster, int gpu) : gpu_(gpu) {
  refuse(static_cast<size_t>(cluster.size()));
}

NcclNodeRank::~NcclNodeRank() = default;

void NcclNodeRank::allreduce_sum(float*, index_t, cudaStream_t) { refuse(2); }

}  // namespace hetsgd::cuda
