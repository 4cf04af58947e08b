// The cross-rank step of a run across processes on NCCL: the rank's node sum is staged on one
// of its GPUs and added over the ranks by one all-reduce between the ranks' GPUs.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/cross_rank_sum.h"
#include "core/error.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/device_guard.cuh"
#include "kernels/cuda/nccl_ops.h"

namespace hetsgd::cuda {
namespace {

// The CUDA replica behind any decorators (emulation and fault injection never change how
// parameters move).
CudaDevice* as_cuda(Device* d) { return dynamic_cast<CudaDevice*>(&d->backend()); }

// The GPU's UUID as hex: unique across machines, so two ranks naming the same key share a GPU.
std::string gpu_uuid(int gpu) {
  cudaDeviceProp prop{};
  HETSGD_CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
  std::string out = "gpu-";
  char hex[3];
  for (char b : prop.uuid.bytes) {
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(static_cast<unsigned char>(b)));
    out += hex;
  }
  return out;
}

class NcclCrossRankSum final : public CrossRankSum {
 public:
  // Collective over `cluster` (the NCCL bootstrap). `n` floats of staging are allocated up
  // front, the size of the model: both sums move the whole model.
  NcclCrossRankSum(Cluster& cluster, int gpu, index_t n) : gpu_(gpu) {
    DeviceGuard guard(gpu_);
    HETSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    try {
      stage_.resize(static_cast<std::size_t>(n));
      rank_ = std::make_unique<NcclNodeRank>(cluster, gpu_);
    } catch (...) {
      HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
      throw;
    }
  }

  ~NcclCrossRankSum() override {
    rank_.reset();
    DeviceGuard guard(gpu_);
    HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }

  const char* name() const override { return "nccl"; }

  void sum_host(float* data, index_t n) override {
    DeviceGuard guard(gpu_);
    grow(n);
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(stage_.data(), data, bytes, cudaMemcpyHostToDevice, stream_));
    rank_->allreduce_sum(stage_.data(), n, stream_);
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(data, stage_.data(), bytes, cudaMemcpyDeviceToHost, stream_));
    HETSGD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // Device to device throughout: devices[0]'s gradient into the staging buffer (a peer copy
  // when it lives on another GPU of the rank), the all-reduce, then the sum into every
  // device's gradient on that device's own stream.
  void sum_gradients(const std::vector<Device*>& devices) override {
    std::vector<CudaDevice*> devs;
    for (Device* d : devices) {
      CudaDevice* c = as_cuda(d);
      HETSGD_CHECK(c != nullptr, "NCCL cross-rank sum: device " << d->name() << " is not a GPU");
      devs.push_back(c);
    }
    const index_t n = devs[0]->layout().total();
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    devs[0]->synchronize();
    {
      DeviceGuard guard(gpu_);
      grow(n);
      HETSGD_CUDA_CHECK(
          cudaMemcpyAsync(stage_.data(), devs[0]->grad_data(), bytes, cudaMemcpyDefault, stream_));
      rank_->allreduce_sum(stage_.data(), n, stream_);
      HETSGD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    for (CudaDevice* d : devs) {
      DeviceGuard guard(d->gpu());
      HETSGD_CUDA_CHECK(
          cudaMemcpyAsync(d->grad_data(), stage_.data(), bytes, cudaMemcpyDefault, d->stream()));
    }
    for (CudaDevice* d : devs) {
      d->synchronize();
      d->mark_gradient_external();
    }
  }

 private:
  // Called with gpu_ current; nothing is queued on the buffer between calls.
  void grow(index_t n) {
    if (static_cast<std::size_t>(n) > stage_.size()) stage_.resize(static_cast<std::size_t>(n));
  }

  int gpu_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer<float> stage_;
  std::unique_ptr<NcclNodeRank> rank_;
};

}  // namespace

CrossRankOffer nccl_cross_rank_offer(const std::vector<Device*>& devices) {
  if (!nccl_built() || devices.empty()) return {};
  for (Device* d : devices) {
    if (as_cuda(d) == nullptr) return {};  // a CPU replica: the host transport handles it
  }
  const int gpu = as_cuda(devices[0])->gpu();
  const index_t n = devices[0]->layout().total();
  CrossRankOffer offer;
  offer.key = gpu_uuid(gpu);
  offer.make = [gpu, n](Cluster& cluster) -> std::unique_ptr<CrossRankSum> {
    return std::make_unique<NcclCrossRankSum>(cluster, gpu, n);
  };
  return offer;
}

}  // namespace hetsgd::cuda
