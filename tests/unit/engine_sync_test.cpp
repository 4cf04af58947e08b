// The synchronous SGD baseline and the host Communicator on real CPU devices.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/communicator.h"
#include "core/engine/batch_source.h"
#include "core/engine/trainer.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

constexpr float kParamTol = 2e-5f;  // float reassociation of K partial gradients

TEST(EngineSync, MatchesSingleDeviceSgdOnTheGlobalBatch) {
  test::EngineProblem p = test::small_problem(1024, 128, OptimizerKind::kSgd);
  for (int k : {2, 3}) {
    auto devices = test::cpu_devices(k == 2 ? std::vector<std::string>{"cpu:0", "cpu:1"}
                                            : std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"},
                                     p.config);
    auto comm = make_host_communicator();
    TrainOptions o;
    o.algo = Algo::kSync;
    o.lr0 = 0.5;
    o.b0 = 32;
    o.lr_scaling = LrScaling::kNone;  // the reference below uses lr0 as is
    o.lambda = 0.0;
    o.eval_at_start = false;
    o.max_epochs = 0.0;
    const index_t global = k * o.b0;
    o.round_samples = 6 * global;  // six steps per round
    o.max_rounds = 2;
    const TrainResult r = train(devices, *comm, p.train, p.test, o);

    // Reference: one device, train_step on the same global batches from the same cursor.
    auto ref = test::cpu_devices({"cpu:9"}, p.config);
    BatchSource src(p.train.rows(), o.seed);
    std::vector<index_t> rows;
    CsrBatch batch;
    for (int step = 0; step < 12; ++step) {
      src.next(global, &rows);
      gather_rows(p.train, rows.data(), global, &batch);
      ref[0]->train_step(batch, static_cast<float>(o.lr0));
    }
    std::vector<float> want(static_cast<size_t>(ref[0]->layout().total()));
    ref[0]->read_params(want.data());
    ASSERT_EQ(r.centre.size(), want.size());
    EXPECT_EQ(r.samples, 12 * global);
    double max_diff = 0.0, max_moved = 0.0;
    std::vector<float> init(want.size());
    auto fresh = test::cpu_devices({"cpu:8"}, p.config);
    fresh[0]->read_params(init.data());
    for (size_t i = 0; i < want.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(r.centre[i] - want[i])));
      max_moved = std::max(max_moved, static_cast<double>(std::abs(want[i] - init[i])));
    }
    EXPECT_LT(max_diff, kParamTol) << "K=" << k;
    EXPECT_GT(max_moved, 100 * kParamTol) << "the reference did not train";
    // Every replica holds the same weights after each step.
    for (auto& d : devices) {
      std::vector<float> w(want.size());
      d->read_params(w.data());
      EXPECT_EQ(w, r.centre);
    }
    for (const DeviceSummary& s : r.devices) EXPECT_EQ(s.updates, 12);
  }
}

TEST(EngineCommunicator, MergingIdenticalReplicasIsTheIdentity) {
  test::EngineProblem p = test::small_problem(256, 64);
  auto devices = test::cpu_devices({"cpu:0", "cpu:1", "cpu:2"}, p.config);
  std::vector<Device*> raw = {devices[0].get(), devices[1].get(), devices[2].get()};
  const size_t n = static_cast<size_t>(devices[0]->layout().total());
  std::vector<float> w0(n), avg(n);
  devices[0]->read_params(w0.data());
  auto comm = make_host_communicator();
  for (const std::vector<double>& w :
       {std::vector<double>{0.2, 0.3, 0.5}, std::vector<double>{1.0 / 3, 1.0 / 3, 1.0 / 3},
        std::vector<double>{0.0, 1.0, 0.0}}) {
    comm->average_params(raw, w, avg.data());
    EXPECT_EQ(avg, w0);
  }
}

TEST(EngineCommunicator, WeightedAverageBroadcastAndAllReduce) {
  test::EngineProblem p = test::small_problem(256, 64, OptimizerKind::kSgd);
  auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
  std::vector<Device*> raw = {devices[0].get(), devices[1].get()};
  const size_t n = static_cast<size_t>(devices[0]->layout().total());
  std::vector<float> a(n), b(n), avg(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 7);
    b[i] = -static_cast<float>(i % 5);
  }
  devices[0]->write_params(a.data());
  devices[1]->write_params(b.data());
  auto comm = make_host_communicator();
  comm->average_params(raw, {0.25, 0.75}, avg.data());
  for (size_t i = 0; i < n; i += 97) ASSERT_FLOAT_EQ(avg[i], 0.25f * a[i] + 0.75f * b[i]) << i;
  comm->broadcast_params(raw, avg.data());
  std::vector<float> back(n);
  devices[1]->read_params(back.data());
  EXPECT_EQ(back, avg);

  // All-reduce: gradients of two different halves, weights 0.5 each = gradient of the union.
  CsrBatch h0, h1, all;
  slice_rows(p.train, 0, 32, &h0);
  slice_rows(p.train, 32, 64, &h1);
  slice_rows(p.train, 0, 64, &all);
  devices[0]->gradient(h0, 1.0f);
  devices[1]->gradient(h1, 1.0f);
  comm->allreduce_gradients(raw, {0.5, 0.5});
  auto ref = test::cpu_devices({"cpu:5"}, p.config);
  ref[0]->write_params(avg.data());
  ref[0]->gradient(all, 1.0f);
  std::vector<float> g0(n), g1(n), gr(n);
  devices[0]->read_gradient(g0.data());
  devices[1]->read_gradient(g1.data());
  ref[0]->read_gradient(gr.data());
  EXPECT_EQ(g0, g1);
  double max_diff = 0.0;
  for (size_t i = 0; i < n; ++i) max_diff = std::max(max_diff, std::abs(double(g0[i]) - gr[i]));
  EXPECT_LT(max_diff, 1e-5);
}

}  // namespace
}  // namespace hetsgd
