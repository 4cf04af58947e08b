// The only file that knows which backends were built (HETSGD_WITH_CUDA).
#include "kernels/registry.h"

#include <thread>

#include "core/centre_store.h"
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

ModelConfig resolve_output_layer(const ModelConfig& config, const std::vector<DeviceId>& devices) {
  ModelConfig out = config;
  for (const DeviceId& id : devices) {
    if (id.kind != DeviceKind::kCuda) continue;
    HETSGD_CHECK(config.output_layer != OutputLayer::kShortlist,
                 "--output-layer=shortlist: cuda:"
                     << id.ordinal
                     << " scores every label (use --output-layer=full or auto with CUDA "
                        "devices, or CPU workers only)");
    out.output_layer = OutputLayer::kFull;
  }
  return out;
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

  // The bound communicator's centre store (in GPU memory) while the whole set merges; after
  // a failure the survivors merge through the host store, which takes the centre over once.
  std::unique_ptr<CentreStore> make_centre_store() override;

 private:
  Communicator& pick(const std::vector<Device*>& devices) {
    return devices == devices_ ? *bound_ : *host_;
  }

  std::unique_ptr<Communicator> bound_;
  std::vector<Device*> devices_;
  std::unique_ptr<Communicator> host_;
};

/// The centre of a BoundCommunicator: `bound` (the backend's store) while the merges span the
/// devices it was made for, the host store once they do not.
class FallbackCentreStore final : public CentreStore {
 public:
  FallbackCentreStore(std::unique_ptr<CentreStore> bound, std::unique_ptr<CentreStore> host,
                      std::vector<Device*> devices)
      : bound_(std::move(bound)), host_(std::move(host)), devices_(std::move(devices)) {}

  void host_written() override {
    bound_->host_written();
    host_->host_written();
  }
  void replicas_hold_centre(const std::vector<Device*>& devices) override {
    active(devices).replicas_hold_centre(devices);
  }
  void merge(const HostCentre& host, const std::vector<Device*>& live, const std::vector<double>& w,
             double alpha, double beta, double mu) override {
    CentreStore& to = active(live);
    if (&to != active_) {
      // The centre moves (through the host, once): the host copy is brought up to date from
      // the store that holds it, and the other one starts from it.
      if (active_ != nullptr) active_->read_back(host);
      to.host_written();
      active_ = &to;
    }
    to.merge(host, live, w, alpha, beta, mu);
  }
  void read_back(const HostCentre& host) override {
    if (active_ != nullptr) active_->read_back(host);
  }
  index_t last_merge_floats() const override {
    return active_ != nullptr ? active_->last_merge_floats() : 0;
  }
  std::uint64_t transfer_bytes() const override { return bound_->transfer_bytes(); }

 private:
  CentreStore& active(const std::vector<Device*>& devices) {
    return devices == devices_ ? *bound_ : *host_;
  }

  std::unique_ptr<CentreStore> bound_, host_;
  std::vector<Device*> devices_;
  CentreStore* active_ = nullptr;
};

std::unique_ptr<CentreStore> BoundCommunicator::make_centre_store() {
  const index_t n = devices_.front()->layout().total();
  std::unique_ptr<CentreStore> bound = bound_->make_centre_store();
  if (bound == nullptr) bound = make_host_centre_store(*bound_, n);
  return std::make_unique<FallbackCentreStore>(std::move(bound), make_host_centre_store(*host_, n),
                                               devices_);
}

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
