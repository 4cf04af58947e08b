// Merging replicas on the GPUs: a weighted sum per GPU, NCCL across GPUs.
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/device_guard.cuh"
#include "kernels/cuda/kernels.cuh"

#if HETSGD_WITH_NCCL
#include <nccl.h>
#endif

namespace hetsgd::cuda {
namespace {

// The virtual devices living on one GPU, with that GPU's accumulation buffer and stream.
struct GpuGroup {
  int gpu = 0;
  std::vector<size_t> members;  // indices into the device list
  DeviceBuffer<float> acc;      // sum of the members' weighted buffers (layout.total())
  cudaStream_t stream = nullptr;
};

class CudaCommunicator final : public Communicator {
 public:
  explicit CudaCommunicator(const std::vector<CudaDevice*>& devices)
      : count_(devices.size()), total_(devices.front()->layout().total()) {
    std::map<int, size_t> by_gpu;
    for (size_t i = 0; i < devices.size(); ++i) {
      HETSGD_CHECK(devices[i]->layout().total() == total_,
                   "communicator: device " << i << " holds " << devices[i]->layout().total()
                                           << " parameters, device 0 " << total_);
      const int gpu = devices[i]->gpu();
      auto it = by_gpu.find(gpu);
      if (it == by_gpu.end()) {
        it = by_gpu.emplace(gpu, groups_.size()).first;
        groups_.push_back(std::make_unique<GpuGroup>());
        groups_.back()->gpu = gpu;
      }
      groups_[it->second]->members.push_back(i);
    }
    for (auto& g : groups_) {
      DeviceGuard guard(g->gpu);
      HETSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
      g->acc.resize(static_cast<size_t>(total_));
    }
#if HETSGD_WITH_NCCL
    if (groups_.size() > 1) {
      std::vector<int> gpus;
      for (auto& g : groups_) gpus.push_back(g->gpu);
      comms_.resize(groups_.size());
      HETSGD_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(gpus.size()), gpus.data()));
    }
#else
    HETSGD_CHECK(groups_.size() == 1, "several GPUs need NCCL, which this build lacks");
#endif
  }

  ~CudaCommunicator() override {
#if HETSGD_WITH_NCCL
    for (ncclComm_t c : comms_) HETSGD_NCCL_CHECK_NOTHROW(ncclCommDestroy(c));
#endif
    for (auto& g : groups_) {
      if (g->stream == nullptr) continue;
      if (cudaSetDevice(g->gpu) != cudaSuccess) (void)cudaGetLastError();
      HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(g->stream));
    }
  }

  void average_params(const std::vector<Device*>& devices, const std::vector<double>& weights,
                      float* average) override {
    const auto devs = resolve(devices, weights.size());
    weighted_sums(devs, weights, /*grads=*/false);
    // acc of the first GPU = the sum over GPUs (NCCL reduce to rank 0, in place).
#if HETSGD_WITH_NCCL
    if (groups_.size() > 1) {
      HETSGD_NCCL_CHECK(ncclGroupStart());
      for (size_t r = 0; r < groups_.size(); ++r) {
        DeviceGuard guard(groups_[r]->gpu);
        HETSGD_NCCL_CHECK(ncclReduce(groups_[r]->acc.data(), groups_[r]->acc.data(), total_,
                                     ncclFloat, ncclSum, 0, comms_[r], groups_[r]->stream));
      }
      HETSGD_NCCL_CHECK(ncclGroupEnd());
    }
#endif
    GpuGroup& g0 = *groups_.front();
    DeviceGuard guard(g0.gpu);
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(average, g0.acc.data(), total_ * sizeof(float),
                                      cudaMemcpyDeviceToHost, g0.stream));
    sync_all();
  }

  void broadcast_params(const std::vector<Device*>& devices, const float* params) override {
    const auto devs = resolve(devices, devices.size());
    GpuGroup& g0 = *groups_.front();
    {
      DeviceGuard guard(g0.gpu);
      HETSGD_CUDA_CHECK(cudaMemcpyAsync(g0.acc.data(), params, total_ * sizeof(float),
                                        cudaMemcpyHostToDevice, g0.stream));
    }
#if HETSGD_WITH_NCCL
    if (groups_.size() > 1) {
      HETSGD_NCCL_CHECK(ncclGroupStart());
      for (size_t r = 0; r < groups_.size(); ++r) {
        DeviceGuard guard(groups_[r]->gpu);
        HETSGD_NCCL_CHECK(ncclBroadcast(groups_[r]->acc.data(), groups_[r]->acc.data(), total_,
                                        ncclFloat, 0, comms_[r], groups_[r]->stream));
      }
      HETSGD_NCCL_CHECK(ncclGroupEnd());
    }
#endif
    scatter(devs, /*grads=*/false);
  }

  void allreduce_gradients(const std::vector<Device*>& devices,
                           const std::vector<double>& weights) override {
    const auto devs = resolve(devices, weights.size());
    weighted_sums(devs, weights, /*grads=*/true);
#if HETSGD_WITH_NCCL
    if (groups_.size() > 1) {
      HETSGD_NCCL_CHECK(ncclGroupStart());
      for (size_t r = 0; r < groups_.size(); ++r) {
        DeviceGuard guard(groups_[r]->gpu);
        HETSGD_NCCL_CHECK(ncclAllReduce(groups_[r]->acc.data(), groups_[r]->acc.data(), total_,
                                        ncclFloat, ncclSum, comms_[r], groups_[r]->stream));
      }
      HETSGD_NCCL_CHECK(ncclGroupEnd());
    }
#endif
    scatter(devs, /*grads=*/true);
    for (CudaDevice* d : devs) d->mark_gradient_external();
  }

  const char* name() const override { return groups_.size() > 1 ? "nccl" : "cuda-shared"; }

 private:
  std::vector<CudaDevice*> resolve(const std::vector<Device*>& devices, size_t n_weights) const {
    HETSGD_CHECK(devices.size() == count_ && n_weights == count_,
                 "communicator made for " << count_ << " devices called with " << devices.size()
                                          << " devices and " << n_weights << " weights");
    std::vector<CudaDevice*> out;
    for (Device* d : devices) {
      auto* c = dynamic_cast<CudaDevice*>(d);
      HETSGD_CHECK(c != nullptr, "communicator: " << d->id().str() << " is not a CUDA replica");
      out.push_back(c);
    }
    // Every replica must be idle: their streams are not ordered with ours otherwise.
    for (CudaDevice* c : out) c->synchronize();
    return out;
  }

  // acc_g = sum over the group's members of w_i * (params or gradient)_i: the pre-scaling
  // that makes a plain NCCL sum a weighted average.
  void weighted_sums(const std::vector<CudaDevice*>& devs, const std::vector<double>& weights,
                     bool grads) {
    for (auto& g : groups_) {
      DeviceGuard guard(g->gpu);
      bool first = true;
      for (size_t i : g->members) {
        const float* src = grads ? devs[i]->grad_data() : devs[i]->params_data();
        detail::launch_weighted_sum(g->acc.data(), src, static_cast<float>(weights[i]), !first,
                                    total_, g->stream);
        first = false;
      }
    }
  }

  // Copies each GPU's acc into its members' params or gradients, then waits.
  void scatter(const std::vector<CudaDevice*>& devs, bool grads) {
    for (auto& g : groups_) {
      DeviceGuard guard(g->gpu);
      for (size_t i : g->members) {
        float* dst = grads ? devs[i]->grad_data() : devs[i]->params_data();
        HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, g->acc.data(), total_ * sizeof(float),
                                          cudaMemcpyDeviceToDevice, g->stream));
      }
    }
    sync_all();
  }

  void sync_all() {
    for (auto& g : groups_) {
      DeviceGuard guard(g->gpu);
      HETSGD_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    }
  }

  size_t count_;
  index_t total_;
  std::vector<std::unique_ptr<GpuGroup>> groups_;
#if HETSGD_WITH_NCCL
  std::vector<ncclComm_t> comms_;
#endif
};

}  // namespace

std::unique_ptr<Communicator> make_cuda_communicator(const std::vector<Device*>& devices) {
  if (devices.empty()) return nullptr;
  std::vector<CudaDevice*> cuda_devices;
  std::vector<int> gpus;
  for (Device* d : devices) {
    auto* c = dynamic_cast<CudaDevice*>(d);
    if (c == nullptr) return nullptr;  // CPU or wrapped device: host staging handles it
    cuda_devices.push_back(c);
    gpus.push_back(c->gpu());
  }
#if !HETSGD_WITH_NCCL
  for (int g : gpus) {
    if (g != gpus.front()) return nullptr;
  }
#endif
  return std::make_unique<CudaCommunicator>(cuda_devices);
}

}  // namespace hetsgd::cuda
