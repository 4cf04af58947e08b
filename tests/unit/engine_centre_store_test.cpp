// The engine asks its centre store for the centre only where it needs the host copy
// (evaluation, checkpoint, final model): a store that keeps Z apart from the host copy, as the
// CUDA store keeps it in GPU memory, is uploaded once and read back once per evaluation, and
// the run ends with the host store's model bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/centre_store.h"
#include "core/communicator.h"
#include "core/engine/merge_weights.h"
#include "core/engine/trainer.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

// Z and Z_prev in buffers of its own ("the device"), merged densely in the engine's
// arithmetic through the communicator's host calls; counts the copies between them and the
// host copy.
struct Crossings {
  int uploads = 0, read_backs = 0;
};

class ResidentStore final : public CentreStore {
 public:
  ResidentStore(Communicator& comm, Crossings& count) : comm_(comm), count_(count) {}

  void host_written() override { upload_ = true; }
  void replicas_hold_centre(const std::vector<Device*>&) override {}
  void merge(const HostCentre& host, const std::vector<Device*>& live, const std::vector<double>& w,
             double alpha, double beta, double mu) override {
    if (upload_) {
      z_ = *host.z;
      z_prev_ = host.z_prev->empty() ? *host.z : *host.z_prev;
      ++count_.uploads;
      upload_ = false;
    }
    const auto n = static_cast<index_t>(z_.size());
    std::vector<float> avg(z_.size());
    comm_.average_params(live, w, avg.data());
    update_centre(z_.data(), z_prev_.data(), avg.data(), n, alpha, mu);
    if (beta >= 1.0) {
      comm_.broadcast_params(live, z_.data());
      return;
    }
    std::vector<float> p(z_.size());
    for (Device* d : live) {
      d->read_params(p.data());
      pull_towards(p.data(), z_.data(), n, beta);
      d->write_params(p.data());
    }
  }
  void read_back(const HostCentre& host) override {
    if (z_.empty()) return;
    *host.z = z_;
    if (!host.z_prev->empty()) *host.z_prev = z_prev_;
    ++count_.read_backs;
  }
  index_t last_merge_floats() const override { return static_cast<index_t>(z_.size()); }

 private:
  Communicator& comm_;
  Crossings& count_;
  std::vector<float> z_, z_prev_;
  bool upload_ = true;
};

// The host communicator, offering a ResidentStore.
class ResidentCommunicator final : public Communicator {
 public:
  ResidentCommunicator() : host_(make_host_communicator()) {}
  void average_params(const std::vector<Device*>& d, const std::vector<double>& w,
                      float* average) override {
    host_->average_params(d, w, average);
  }
  void broadcast_params(const std::vector<Device*>& d, const float* params) override {
    host_->broadcast_params(d, params);
  }
  void allreduce_gradients(const std::vector<Device*>& d, const std::vector<double>& w) override {
    host_->allreduce_gradients(d, w);
  }
  const char* name() const override { return "resident"; }
  std::unique_ptr<CentreStore> make_centre_store() override {
    ++stores;
    return std::make_unique<ResidentStore>(*this, count);
  }

  int stores = 0;
  Crossings count;

 private:
  std::unique_ptr<Communicator> host_;
};

TEST(EngineCentreStore, TheCentreCrossesOnlyWhereTheHostNeedsIt) {
  test::EngineProblem p = test::small_problem(1024, 128);
  TrainOptions o;
  o.algo = Algo::kAdaptive;
  o.deterministic = true;
  o.batch_policy = BatchPolicy::kFixed;
  o.b0 = 32;
  o.round_samples = 256;
  o.max_rounds = 6;
  o.max_epochs = 0.0;
  o.eval_at_start = false;
  o.eval_every_rounds = 2;
  o.mu = 0.3;
  o.beta = 0.5;
  std::vector<float> want;
  {
    auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
    auto comm = make_host_communicator();
    want = train(devices, *comm, p.train, p.test, o).model;
  }
  auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
  ResidentCommunicator comm;
  const TrainResult r = train(devices, comm, p.train, p.test, o);
  EXPECT_EQ(comm.stores, 1);  // asked once per run
  EXPECT_EQ(r.model, want);
  EXPECT_EQ(comm.count.uploads, 1);  // the start; nothing writes the host copy after it
  ASSERT_EQ(r.evals.size(), 3u);     // rounds 2, 4, 6
  EXPECT_EQ(comm.count.read_backs, 3);

  // A checkpoint between evaluations (round 3) reads the centre back once more; the one at
  // round 6 follows that round's evaluation and finds the host copy current.
  o.checkpoint_path = ::testing::TempDir() + "centre_store_test.ckpt";
  o.checkpoint_every_rounds = 3;
  auto again = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
  ResidentCommunicator counted;
  EXPECT_EQ(train(again, counted, p.train, p.test, o).model, want);
  EXPECT_EQ(counted.count.read_backs, 4);
  std::remove(o.checkpoint_path.c_str());
}

}  // namespace
}  // namespace hetsgd
