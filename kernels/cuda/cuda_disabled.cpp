// The CUDA seam for CPU-only builds: no GPUs, and asking for one is a clear error.
#include "core/error.h"
#include "kernels/cuda/api.h"

namespace hetsgd::cuda {

int device_count() { return 0; }

std::string device_name(int ordinal) {
  throw DeviceUnavailable("cuda:" + std::to_string(ordinal) +
                          ": this build has no CUDA backend (configure with -DHETSGD_CUDA=ON)");
}

std::unique_ptr<Device> make_device(int ordinal, const ModelConfig&, const DeviceOptions&) {
  throw DeviceUnavailable("cuda:" + std::to_string(ordinal) +
                          ": this build has no CUDA backend (configure with -DHETSGD_CUDA=ON)");
}

std::unique_ptr<Communicator> make_cuda_communicator(const std::vector<Device*>&) {
  return nullptr;
}

CrossRankOffer nccl_cross_rank_offer(const std::vector<Device*>&) { return {}; }

}  // namespace hetsgd::cuda
