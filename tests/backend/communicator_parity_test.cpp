// Merging through the communicator a backend offers (device-side on CUDA, host elsewhere)
// against weighted sums computed here from read_params / read_gradient.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/emulated_device.h"
#include "core/engine/centre.h"
#include "core/math/centre_update.h"
#include "kernels/cuda/api.h"
#include "tests/backend/parity_fixture.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 777001;
/// Weighted sums of three replicas in float vs double: a few ulps of the largest term.
constexpr double kMergeTol = 1e-6;

class MergeParity : public DeviceParity {
 protected:
  // Three replicas on the parameter's device (virtual devices share a GPU), each trained on a
  // different batch so their parameters and gradients differ.
  void make_replicas(const ModelConfig& c) {
    for (int i = 0; i < 3; ++i) {
      owned_.push_back(dut(c));
      devices_.push_back(owned_.back().get());
      owned_.back()->train_step(small_batch(c, 16, kSeed + i), 0.1f);
    }
  }
  // The backend's communicator: device-side for CUDA replicas, the host one otherwise.
  std::unique_ptr<Communicator> communicator() const {
    auto comm = cuda::make_cuda_communicator(devices_);
    if (GetParam().kind == DeviceKind::kCuda) {
      EXPECT_NE(comm, nullptr) << "CUDA replicas must get the device-side communicator";
      if (comm) {
        EXPECT_STREQ(comm->name(), "cuda-shared");
      }
    } else {
      EXPECT_EQ(comm, nullptr) << "CPU replicas must fall back to the host communicator";
    }
    return comm ? std::move(comm) : make_host_communicator();
  }
  // sum_i w_i * x_i in double, from host copies.
  static std::vector<float> weighted(const std::vector<std::vector<float>>& xs,
                                     const std::vector<double>& w) {
    std::vector<float> out(xs[0].size());
    for (size_t k = 0; k < out.size(); ++k) {
      double s = 0.0;
      for (size_t i = 0; i < xs.size(); ++i) s += w[i] * xs[i][k];
      out[k] = static_cast<float>(s);
    }
    return out;
  }

  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> devices_;
};

TEST_P(MergeParity, AverageParamsIsTheWeightedSum) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  make_replicas(c);
  std::vector<std::vector<float>> ps;
  for (Device* d : devices_) ps.push_back(params_of(*d));
  const std::vector<double> w = {0.5, 0.3, 0.2};
  auto comm = communicator();
  std::vector<float> avg(ps[0].size());
  comm->average_params(devices_, w, avg.data());
  expect_all_near(avg, weighted(ps, w), kMergeTol, "average");
  // Averaging does not change the replicas.
  for (size_t i = 0; i < devices_.size(); ++i) EXPECT_EQ(params_of(*devices_[i]), ps[i]);
}

TEST_P(MergeParity, BroadcastParamsReachesEveryReplica) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  make_replicas(c);
  std::vector<float> p(static_cast<size_t>(devices_[0]->layout().total()));
  for (size_t k = 0; k < p.size(); ++k) p[k] = uniform01(kSeed + 9, k);
  auto comm = communicator();
  comm->broadcast_params(devices_, p.data());
  for (Device* d : devices_) EXPECT_EQ(params_of(*d), p);
}

TEST_P(MergeParity, AllreduceGradientsThenUpdateMatchesCpu) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  make_replicas(c);
  // Synchronous SGD: common weights, one gradient per replica, all-reduce, one update each.
  std::vector<float> start = params_of(*devices_[0]);
  for (Device* d : devices_) d->write_params(start.data());
  std::vector<std::vector<float>> gs;
  for (size_t i = 0; i < devices_.size(); ++i) {
    devices_[i]->gradient(small_batch(c, 12, kSeed + 20 + i), 1.0f);
    gs.push_back(gradient_of(*devices_[i]));
  }
  const std::vector<double> w = {0.25, 0.25, 0.5};
  auto comm = communicator();
  comm->allreduce_gradients(devices_, w);
  const std::vector<float> expect = weighted(gs, w);
  for (Device* d : devices_) expect_all_near(gradient_of(*d), expect, kMergeTol, "all-reduce");
  // The update after an all-reduce touches the union of the replicas' first-layer rows.
  auto ref = reference(c);
  ref->write_params(start.data());
  ref->write_gradient(expect.data());
  ref->apply_update(0.5f);
  for (Device* d : devices_) {
    d->apply_update(0.5f);
    expect_all_near(params_of(*d), params_of(*ref), kSgdParamTol, "after all-reduce update");
  }
}

// A CPU + CUDA mix always goes through host staging.
TEST_P(MergeParity, MixedWithCpuUsesHostStaging) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto cpu = reference(c);
  auto other = dut(c);
  cpu->train_step(small_batch(c, 16, kSeed + 30), 0.1f);
  other->train_step(small_batch(c, 16, kSeed + 31), 0.1f);
  std::vector<Device*> mix = {other.get(), cpu.get()};
  EXPECT_EQ(cuda::make_cuda_communicator(mix), nullptr);
  auto host = make_host_communicator();
  const std::vector<double> w = {0.6, 0.4};
  std::vector<float> avg(static_cast<size_t>(cpu->layout().total()));
  host->average_params(mix, w, avg.data());
  expect_all_near(avg, weighted({params_of(*other), params_of(*cpu)}, w), kMergeTol, "mixed");
  host->broadcast_params(mix, avg.data());
  EXPECT_EQ(params_of(*other), avg);
}

// The centre update (core/math/centre_update.h) on host copies, in the engine's arithmetic.
void centre_on_host(std::vector<float>* z, std::vector<float>* z_prev,
                    const std::vector<float>& avg, double alpha, double mu) {
  for (size_t k = 0; k < z->size(); ++k) {
    math::centre_update((*z)[k], (*z_prev)[k], avg[k], alpha, mu);
  }
}

// The engine's Centre with the store the backend's communicator offers (in GPU memory for CUDA
// replicas, the host store otherwise): the replicas restart from, or are pulled towards, the
// centre computed here on the host.
TEST_P(MergeParity, MergeCentreMatchesHostArithmetic) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  make_replicas(c);
  const size_t n = static_cast<size_t>(devices_[0]->layout().total());
  std::vector<float> z(n), z_prev(n);
  for (size_t k = 0; k < n; ++k) {
    z[k] = uniform01(kSeed + 40, k) - 0.5f;
    z_prev[k] = uniform01(kSeed + 41, k) - 0.5f;
  }
  auto comm = communicator();
  Centre centre(static_cast<index_t>(n), *comm);
  centre.edit_z() = z;
  centre.edit_z_prev() = z_prev;
  const std::vector<double> w = {0.2, 0.5, 0.3};
  for (double beta : {1.0, 0.4}) {
    SCOPED_TRACE("beta " + std::to_string(beta));
    std::vector<std::vector<float>> ps;
    for (Device* d : devices_) ps.push_back(params_of(*d));
    centre.merge(devices_, w, 0.8, beta, 0.3);
    centre_on_host(&z, &z_prev, weighted(ps, w), 0.8, 0.3);
    const std::vector<float> got_z = centre.z(), got_prev = centre.z_prev();
    expect_all_near(got_z, z, kMergeTol, "centre");
    expect_all_near(got_prev, z_prev, kMergeTol, "centre history");
    for (size_t i = 0; i < devices_.size(); ++i) {
      std::vector<float> want = z;
      if (beta < 1.0) {
        for (size_t k = 0; k < n; ++k) want[k] = math::pull_towards(ps[i][k], z[k], beta);
      }
      expect_all_near(params_of(*devices_[i]), want, kMergeTol, "replica " + std::to_string(i));
    }
    // Keep the host copies exact for the next round.
    z = got_z;
    z_prev = got_prev;
    for (Device* d : devices_) d->train_step(small_batch(c, 16, kSeed + 50), 0.1f);
  }
}

// Emulation slows compute, never merges: an emulated GPU replica still merges on the GPU.
TEST_P(MergeParity, EmulatedReplicasKeepTheBackendMerge) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  auto slow = make_emulated_device(dut(c), 0.5);
  auto fast = dut(c);
  std::vector<Device*> pair = {slow.get(), fast.get()};
  auto comm = cuda::make_cuda_communicator(pair);
  if (GetParam().kind == DeviceKind::kCuda) {
    ASSERT_NE(comm, nullptr);
    EXPECT_STREQ(comm->name(), "cuda-shared");
  } else {
    EXPECT_EQ(comm, nullptr);
  }
}

// After a failure the engine merges the survivors only: the bound communicator hands the
// centre to host staging once and goes on from the same centre.
TEST_P(MergeParity, MergeCentreOnSurvivorsContinuesFromTheSameCentre) {
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  make_replicas(c);
  const size_t n = static_cast<size_t>(devices_[0]->layout().total());
  std::vector<float> z = params_of(*devices_[0]), z_prev = z;
  auto comm = make_communicator(devices_);
  Centre centre(static_cast<index_t>(n), *comm);
  centre.edit_z() = z;
  centre.edit_z_prev() = z_prev;
  const std::vector<double> w3 = {0.4, 0.3, 0.3};
  std::vector<std::vector<float>> ps;
  for (Device* d : devices_) ps.push_back(params_of(*d));
  centre.merge(devices_, w3, 1.0, 1.0, 0.5);
  centre_on_host(&z, &z_prev, weighted(ps, w3), 1.0, 0.5);
  const std::vector<Device*> survivors = {devices_[0], devices_[2]};
  survivors[0]->train_step(small_batch(c, 16, kSeed + 60), 0.1f);
  survivors[1]->train_step(small_batch(c, 16, kSeed + 61), 0.1f);
  const std::vector<double> w2 = {0.5, 0.5};
  const std::vector<std::vector<float>> qs = {params_of(*survivors[0]), params_of(*survivors[1])};
  centre.merge(survivors, w2, 1.0, 1.0, 0.5);
  centre_on_host(&z, &z_prev, weighted(qs, w2), 1.0, 0.5);
  const std::vector<float> got = centre.z();
  expect_all_near(got, z, 4 * kMergeTol, "centre after the switch");
  expect_all_near(params_of(*survivors[1]), z, 4 * kMergeTol, "survivor");
}

HETSGD_INSTANTIATE_ALL_DEVICES(MergeParity);

}  // namespace
}  // namespace hetsgd::test
