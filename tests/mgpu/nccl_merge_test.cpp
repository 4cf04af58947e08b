// Merging across two GPUs (NCCL, plus a shared-GPU sum for the virtual device on GPU 1)
// against the host communicator on the same replicas.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/engine/centre.h"
#include "core/random.h"
#include "datasets/synthetic.h"
#include "kernels/cuda/api.h"
#include "kernels/registry.h"
#include "tests/common/gpu_test.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 99001;
constexpr double kMergeTol = 1e-6;  // float sums on the GPUs vs the host's double sums

class MultiGpuMerge : public ::testing::Test {
 protected:
  void SetUp() override {
    require_cuda_devices(2);
    if (HasFatalFailure() || IsSkipped()) return;
    config_.num_features = 500;
    config_.num_labels = 80;
    config_.hidden = {32};
    config_.optimizer.kind = OptimizerKind::kSgd;
    config_.seed = kSeed;
    // cuda:0, cuda:1 and a second virtual device on cuda:1: NCCL across GPUs after a
    // device-side sum on GPU 1.
    for (int gpu : {0, 1, 1}) {
      owned_.push_back(make_device(DeviceId::cuda(gpu), config_));
      devices_.push_back(owned_.back().get());
      const CsrBatch b = datasets::power_law_batch(16, config_.num_labels, kSeed + devices_.size(),
                                                   config_.num_features);
      owned_.back()->train_step(b, 0.1f);
    }
    comm_ = cuda::make_cuda_communicator(devices_);
    ASSERT_NE(comm_, nullptr);
  }
  std::vector<float> params_of(Device& d) {
    std::vector<float> p(static_cast<size_t>(d.layout().total()));
    d.read_params(p.data());
    return p;
  }
  static void expect_near_all(const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], kMergeTol) << "element " << i << ", seed " << kSeed;
    }
  }

  ModelConfig config_ = test::fixed_model();
  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> devices_;
  std::unique_ptr<Communicator> comm_;
};

TEST_F(MultiGpuMerge, NcclAverageEqualsHostAverage) {
  EXPECT_STREQ(comm_->name(), "nccl");
  const std::vector<double> w = {0.5, 0.2, 0.3};
  std::vector<float> nccl(static_cast<size_t>(devices_[0]->layout().total())), host(nccl.size());
  comm_->average_params(devices_, w, nccl.data());
  make_host_communicator()->average_params(devices_, w, host.data());
  expect_near_all(nccl, host);
}

TEST_F(MultiGpuMerge, NcclBroadcastReachesEveryReplica) {
  std::vector<float> p(static_cast<size_t>(devices_[0]->layout().total()));
  for (size_t k = 0; k < p.size(); ++k) p[k] = uniform01(kSeed + 7, k);
  comm_->broadcast_params(devices_, p.data());
  for (Device* d : devices_) EXPECT_EQ(params_of(*d), p);
}

TEST_F(MultiGpuMerge, NcclAllreduceEqualsHostAllreduce) {
  std::vector<std::vector<float>> grads;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const CsrBatch b =
        datasets::power_law_batch(12, config_.num_labels, kSeed + 20 + i, config_.num_features);
    devices_[i]->gradient(b, 1.0f);
    grads.emplace_back(static_cast<size_t>(devices_[i]->layout().total()));
    devices_[i]->read_gradient(grads.back().data());
  }
  const std::vector<double> w = {0.25, 0.25, 0.5};
  comm_->allreduce_gradients(devices_, w);
  std::vector<float> expect(grads[0].size());
  for (size_t k = 0; k < expect.size(); ++k) {
    double s = 0.0;
    for (size_t i = 0; i < grads.size(); ++i) s += w[i] * grads[i][k];
    expect[k] = static_cast<float>(s);
  }
  for (Device* d : devices_) {
    std::vector<float> g(expect.size());
    d->read_gradient(g.data());
    expect_near_all(g, expect);
  }
}

// The centre kept on the GPUs (NCCL reduce, update on the first GPU, NCCL broadcast) against
// the host communicator's centre on copies of the same replicas.
TEST_F(MultiGpuMerge, NcclCentreMergeEqualsHostCentreMerge) {
  const size_t n = static_cast<size_t>(devices_[0]->layout().total());
  std::vector<float> z(n), z_prev(n);
  for (size_t k = 0; k < n; ++k) {
    z[k] = uniform01(kSeed + 30, k) - 0.5f;
    z_prev[k] = uniform01(kSeed + 31, k) - 0.5f;
  }
  std::vector<std::unique_ptr<Device>> copies;
  std::vector<Device*> host_devices;
  for (Device* d : devices_) {
    copies.push_back(make_device(DeviceId::cpu(), config_));
    const std::vector<float> p = params_of(*d);
    copies.back()->write_params(p.data());
    host_devices.push_back(copies.back().get());
  }
  auto host = make_host_communicator();
  Centre gpu_centre(static_cast<index_t>(n), *comm_), host_centre(static_cast<index_t>(n), *host);
  for (Centre* c : {&gpu_centre, &host_centre}) {
    c->edit_z() = z;
    c->edit_z_prev() = z_prev;
  }
  const std::vector<double> w = {0.3, 0.3, 0.4};
  gpu_centre.merge(devices_, w, 0.9, 0.5, 0.4);
  host_centre.merge(host_devices, w, 0.9, 0.5, 0.4);
  expect_near_all(gpu_centre.z(), host_centre.z());
  // Z and Z_prev crossed the host link once each way: the upload before the merge and the
  // read-back for the comparison.
  EXPECT_EQ(gpu_centre.transfer_bytes(), 4 * n * sizeof(float));
  for (size_t i = 0; i < devices_.size(); ++i) {
    expect_near_all(params_of(*devices_[i]), params_of(*host_devices[i]));
  }
}

}  // namespace
}  // namespace hetsgd::test
