// The only file that knows which backends were built (HETSGD_WITH_CUDA).
#include "kernels/registry.h"

#include <thread>

#include "core/cluster/cluster.h"
#include "core/emulated_device.h"
#include "core/error.h"
#include "kernels/cpu/api.h"
#include "kernels/cuda/api.h"

namespace hetsgd {

std::unique_ptr<Device> make_device(const DeviceId& id, const ModelConfig& config,
                                    const DeviceOptions& options) {
  std::unique_ptr<Device> dev = id.kind == DeviceKind::kCpu
                                    ? cpu::make_device(id.ordinal, config, options)
                                    : cuda::make_device(id.ordinal, config, options);
  return make_emulated_device(std::move(dev), id.speed);
}

namespace {

/// A backend communicator is bound to the device set it was made for (NCCL ranks, per-GPU
/// buffers). After a device failure the engine merges only the survivors: those calls go
/// through host staging instead, so losing a GPU never takes the run down with it.
class BoundCommunicator final : public Communicator {
 public:
  BoundCommunicator(std::unique_ptr<Communicator> bound, std::vector<Device*> devices)
      : bound_(std::move(bound)), devices_(std::move(devices)), host_(make_host_communicator()) {}

  void average_params(const std::vector<Device*>& devices, const std::vector<double>& weights,
                      float* average) override {
    pick(devices).average_params(devices, weights, average);
  }
  void broadcast_params(const std::vector<Device*>& devices, const float* params) override {
    pick(devices).broadcast_params(devices, params);
  }
  void allreduce_gradients(const std::vector<Device*>& devices,
                           const std::vector<double>& weights) override {
    pick(devices).allreduce_gradients(devices, weights);
  }
  const char* name() const override { return bound_->name(); }
  // Across ranks, the node's sums go through NCCL when every device is a CUDA device and the
  // build has NCCL (ClusterCommunicator agrees with the other ranks first).
  CrossRankOffer cross_rank_offer() const override { return cuda::nccl_cross_rank_offer(devices_); }

  // The centre lives in whichever communicator did the last merge; it moves (through the
  // host, once) only when a failure changes the device set.
  void set_centre(const float* z, const float* z_prev, index_t n) override {
    bound_->set_centre(z, z_prev, n);
    centre_ = bound_.get();
    centre_n_ = n;
  }
  void merge_centre(const std::vector<Device*>& devices, const std::vector<double>& weights,
                    double alpha, double mu, double beta) override {
    Communicator& c = pick(devices);
    HETSGD_CHECK(centre_ != nullptr, "merge_centre: no centre (call set_centre first)");
    if (&c != centre_) {
      std::vector<float> z(static_cast<size_t>(centre_n_)), z_prev(z.size());
      centre_->read_centre(z.data(), z_prev.data());
      c.set_centre(z.data(), z_prev.data(), centre_n_);
      centre_ = &c;
    }
    c.merge_centre(devices, weights, alpha, mu, beta);
  }
  void read_centre(float* z, float* z_prev) override {
    HETSGD_CHECK(centre_ != nullptr, "read_centre: no centre (call set_centre first)");
    centre_->read_centre(z, z_prev);
  }

 private:
  Communicator& pick(const std::vector<Device*>& devices) {
    return devices == devices_ ? *bound_ : *host_;
  }

  Communicator* centre_ = nullptr;
  index_t centre_n_ = 0;

  std::unique_ptr<Communicator> bound_;
  std::vector<Device*> devices_;
  std::unique_ptr<Communicator> host_;
};

}  // namespace

std::unique_ptr<Communicator> make_communicator(const std::vector<Device*>& devices) {
  // The CUDA backend answers for all-GPU sets (NCCL or a same-GPU sum); anything else, and
  // every CPU-only build, stages through the host.
  if (std::unique_ptr<Communicator> c = cuda::make_cuda_communicator(devices)) {
    return std::make_unique<BoundCommunicator>(std::move(c), devices);
  }
  return make_host_communicator();
}

int cuda_device_count() { return cuda::device_count(); }

std::vector<DeviceId> resolve_devices(const std::string& text) {
  if (text != "auto") return parse_device_list(text);
  std::vector<DeviceId> out;
  for (int i = 0; i < cuda::device_count(); ++i) out.push_back(DeviceId::cuda(i));
  if (out.empty()) {
    // No GPU: two CPU workers, the second emulated at a third of the speed, so that the
    // default run shows heterogeneity (reported as emulation).
    out.push_back(DeviceId::cpu(0));
    DeviceId slow = DeviceId::cpu(1);
    slow.speed = 0.33;
    out.push_back(slow);
  }
  return out;
}

std::vector<std::string> describe_devices() {
  std::vector<std::string> out;
  out.push_back("cpu: " + std::to_string(std::thread::hardware_concurrency()) +
                " hardware threads, OpenBLAS kernels " + cpu::blas_core_name() +
                " (cpu:N = a worker with its own oneTBB arena)");
  for (int i = 0; i < cuda::device_count(); ++i) {
    out.push_back("cuda:" + std::to_string(i) + ": " + cuda::device_name(i));
  }
  return out;
}

std::string build_info() {
  std::string s = std::string("hetsgd ") + HETSGD_VERSION +
                  " (CUDA=" + (HETSGD_WITH_CUDA ? "ON archs=" HETSGD_CUDA_ARCHS : "OFF") +
                  ", NCCL=" + (HETSGD_WITH_NCCL ? "ON" : "OFF") +
                  ", MPI=" + (mpi_built() ? "ON" : "OFF") + ", TBB=" HETSGD_TBB_VERSION ")";
  return s;
}

}  // namespace hetsgd
