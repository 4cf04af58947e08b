// Merging replicas on the GPUs: a weighted sum per GPU, NCCL across GPUs, and the elastic
// centre kept in GPU memory.
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/device_guard.cuh"
#include "kernels/cuda/nccl_ops.h"
#include "kernels/cuda/update.cuh"

namespace hetsgd::cuda {
namespace {

// The virtual devices living on one GPU, with that GPU's accumulation buffer and stream.
struct GpuGroup {
  int gpu = 0;
  std::vector<size_t> members;  // indices into the device list
  DeviceBuffer<float> acc;      // sum of the members' weighted buffers (layout.total())
  cudaStream_t stream = nullptr;
};

// The CUDA replica behind any decorators (emulation and fault injection never change how
// parameters move).
CudaDevice* as_cuda(Device* d) { return dynamic_cast<CudaDevice*>(&d->backend()); }

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
    try {
      for (auto& g : groups_) {
        DeviceGuard guard(g->gpu);
        HETSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
        g->acc.resize(static_cast<size_t>(total_));
      }
      if (groups_.size() > 1) {
        std::vector<int> gpus;
        for (auto& g : groups_) gpus.push_back(g->gpu);
        nccl_ = std::make_unique<NcclGroup>(gpus);
      }
    } catch (...) {
      destroy_streams();
      throw;
    }
  }

  ~CudaCommunicator() override {
    nccl_.reset();
    destroy_streams();
  }

  void average_params(const std::vector<Device*>& devices, const std::vector<double>& weights,
                      float* average) override {
    const auto devs = resolve(devices, weights.size());
    weighted_sums(devs, weights, /*grads=*/false);
    reduce_to_first();
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
    broadcast_from_first();
    scatter(devs, /*grads=*/false);
    sync_all();
  }

  void allreduce_gradients(const std::vector<Device*>& devices,
                           const std::vector<double>& weights) override {
    const auto devs = resolve(devices, weights.size());
    weighted_sums(devs, weights, /*grads=*/true);
    if (nccl_ != nullptr) nccl_->allreduce_sum(accs(), total_, streams());
    scatter(devs, /*grads=*/true);
    sync_all();
    for (CudaDevice* d : devs) d->mark_gradient_external();
  }

  // The centre and its history live on the first GPU (CudaCentreStore below).
  std::unique_ptr<CentreStore> make_centre_store() override;

  const char* name() const override { return groups_.size() > 1 ? "nccl" : "cuda-shared"; }

 private:
  friend class CudaCentreStore;

  std::vector<CudaDevice*> resolve(const std::vector<Device*>& devices, size_t n_weights) const {
    HETSGD_CHECK(devices.size() == count_ && n_weights == count_,
                 "communicator made for " << count_ << " devices called with " << devices.size()
                                          << " devices and " << n_weights << " weights");
    std::vector<CudaDevice*> out;
    for (Device* d : devices) {
      CudaDevice* c = as_cuda(d);
      HETSGD_CHECK(c != nullptr, "communicator: " << d->id().str() << " is not a CUDA replica");
      out.push_back(c);
    }
    // Every replica's stream must have drained: they are not ordered with ours otherwise.
    for (CudaDevice* c : out) c->synchronize();
    return out;
  }

  std::vector<float*> accs() {
    std::vector<float*> out;
    for (auto& g : groups_) out.push_back(g->acc.data());
    return out;
  }
  std::vector<cudaStream_t> streams() {
    std::vector<cudaStream_t> out;
    for (auto& g : groups_) out.push_back(g->stream);
    return out;
  }
  void reduce_to_first() {
    if (nccl_ != nullptr) nccl_->reduce_sum(accs(), total_, streams());
  }
  void broadcast_from_first() {
    if (nccl_ != nullptr) nccl_->broadcast(accs(), total_, streams());
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

  // Copies each GPU's acc into its members' params or gradients (not waited for).
  void scatter(const std::vector<CudaDevice*>& devs, bool grads) {
    for (auto& g : groups_) {
      DeviceGuard guard(g->gpu);
      for (size_t i : g->members) {
        float* dst = grads ? devs[i]->grad_data() : devs[i]->params_data();
        HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, g->acc.data(), total_ * sizeof(float),
                                          cudaMemcpyDeviceToDevice, g->stream));
      }
    }
  }

  void sync_all() {
    for (auto& g : groups_) {
      DeviceGuard guard(g->gpu);
      HETSGD_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    }
  }

  void destroy_streams() {
    for (auto& g : groups_) {
      if (g->stream == nullptr) continue;
      if (cudaSetDevice(g->gpu) != cudaSuccess) (void)cudaGetLastError();
      HETSGD_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(g->stream));
      HETSGD_CUDA_CHECK_NOTHROW(cudaStreamDestroy(g->stream));
      g->stream = nullptr;
    }
  }

  size_t count_;
  index_t total_;
  std::vector<std::unique_ptr<GpuGroup>> groups_;
  std::unique_ptr<NcclGroup> nccl_;
};

// The centre and its history in the memory of the communicator's first GPU: a merge moves no
// parameter through the host (per-GPU weighted sums, an NCCL reduce, the centre update on the
// first GPU, an NCCL broadcast of the new centre and a device-side restart or pull of every
// replica). Z crosses the host link only when the engine's host copy was written (uploaded
// before the next merge) or is read (read_back), and every such byte is counted.
class CudaCentreStore final : public CentreStore {
 public:
  explicit CudaCentreStore(CudaCommunicator& comm) : comm_(comm) {}

  void host_written() override { upload_ = true; }
  void replicas_hold_centre(const std::vector<Device*>&) override {}

  void merge(const HostCentre& host, const std::vector<Device*>& live, const std::vector<double>& w,
             double alpha, double beta, double mu) override {
    const index_t n = comm_.total_;
    const auto devs = comm_.resolve(live, w.size());
    GpuGroup& g0 = *comm_.groups_.front();
    if (upload_) upload(host);
    comm_.weighted_sums(devs, w, /*grads=*/false);
    comm_.reduce_to_first();
    {
      DeviceGuard guard(g0.gpu);
      detail::launch_centre_update(z_.data(), z_prev_.data(), g0.acc.data(), n, alpha, mu,
                                   g0.stream);
      HETSGD_CUDA_CHECK(cudaMemcpyAsync(g0.acc.data(), z_.data(), n * sizeof(float),
                                        cudaMemcpyDeviceToDevice, g0.stream));
    }
    comm_.broadcast_from_first();
    if (beta >= 1.0) {
      comm_.scatter(devs, /*grads=*/false);
    } else {
      for (auto& g : comm_.groups_) {
        DeviceGuard guard(g->gpu);
        for (size_t i : g->members) {
          detail::launch_pull_towards(devs[i]->params_data(), g->acc.data(), n, beta, g->stream);
        }
      }
    }
    comm_.sync_all();
  }

  void read_back(const HostCentre& host) override {
    if (z_.size() == 0) return;  // no merge yet: the host copy is the centre
    GpuGroup& g0 = *comm_.groups_.front();
    DeviceGuard guard(g0.gpu);
    copy(host.z->data(), z_.data(), cudaMemcpyDeviceToHost, g0.stream);
    if (!host.z_prev->empty()) {
      copy(host.z_prev->data(), z_prev_.data(), cudaMemcpyDeviceToHost, g0.stream);
    }
    HETSGD_CUDA_CHECK(cudaStreamSynchronize(g0.stream));
  }

  index_t last_merge_floats() const override { return comm_.total_; }
  std::uint64_t transfer_bytes() const override { return bytes_; }

 private:
  // Z and Z_prev (Z when the host keeps no history) from the host copy.
  void upload(const HostCentre& host) {
    const index_t n = comm_.total_;
    HETSGD_CHECK(static_cast<index_t>(host.z->size()) == n,
                 "centre of " << host.z->size() << " floats for a model of " << n);
    GpuGroup& g0 = *comm_.groups_.front();
    DeviceGuard guard(g0.gpu);
    z_.resize(static_cast<size_t>(n));
    z_prev_.resize(static_cast<size_t>(n));
    const float* prev = host.z_prev->empty() ? host.z->data() : host.z_prev->data();
    copy(z_.data(), host.z->data(), cudaMemcpyHostToDevice, g0.stream);
    copy(z_prev_.data(), prev, cudaMemcpyHostToDevice, g0.stream);
    HETSGD_CUDA_CHECK(cudaStreamSynchronize(g0.stream));
    upload_ = false;
  }
  // One model-sized copy between host and device on `stream`, counted.
  void copy(float* dst, const float* src, cudaMemcpyKind kind, cudaStream_t stream) {
    const size_t bytes = static_cast<size_t>(comm_.total_) * sizeof(float);
    HETSGD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
    bytes_ += bytes;
  }

  CudaCommunicator& comm_;
  DeviceBuffer<float> z_, z_prev_;
  bool upload_ = true;
  std::uint64_t bytes_ = 0;
};

std::unique_ptr<CentreStore> CudaCommunicator::make_centre_store() {
  return std::make_unique<CudaCentreStore>(*this);
}

}  // namespace

std::unique_ptr<Communicator> make_cuda_communicator(const std::vector<Device*>& devices) {
  if (devices.empty()) return nullptr;
  std::vector<CudaDevice*> cuda_devices;
  for (Device* d : devices) {
    CudaDevice* c = as_cuda(d);
    if (c == nullptr) return nullptr;  // a CPU replica in the set: host staging handles it
    cuda_devices.push_back(c);
  }
  if (!nccl_built()) {
    for (CudaDevice* c : cuda_devices) {
      if (c->gpu() != cuda_devices.front()->gpu()) return nullptr;
    }
  }
  return std::make_unique<CudaCommunicator>(cuda_devices);
}

}  // namespace hetsgd::cuda
