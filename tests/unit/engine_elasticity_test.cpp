// Elasticity: devices that fail mid-run (fault-injection decorator around real CPU devices).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/communicator.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "core/faulty_device.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

// Long enough for a device to fail mid-run: 12 epochs after half an epoch of warm-up, batch
// sizes within the default range.
TrainOptions elastic_options() {
  TrainOptions o = test::quick_options();
  o.b_min = TrainOptions{}.b_min;
  o.b_max = TrainOptions{}.b_max;
  o.warmup_epochs = 0.5;
  o.max_epochs = 12.0;
  o.round_samples = 512;
  return o;
}

TEST(EngineElasticity, FaultyDeviceFailsAfterItsStepsAndStaysDead) {
  test::EngineProblem p = test::small_problem(256, 64);
  auto inner = test::cpu_devices({"cpu:0"}, p.config);
  FaultSpec spec;
  spec.fail_after_steps = 2;
  auto dev = make_faulty_device(std::move(inner[0]), spec);
  CsrBatch b;
  slice_rows(p.train, 0, 16, &b);
  EXPECT_NO_THROW(dev->train_step(b, 1e-3f));
  EXPECT_NO_THROW(dev->train_step(b, 1e-3f));
  EXPECT_THROW(dev->train_step(b, 1e-3f), DeviceUnavailable);
  std::vector<float> params(static_cast<size_t>(dev->layout().total()));
  EXPECT_THROW(dev->read_params(params.data()), DeviceUnavailable);
  const FaultSpec parsed = parse_fault_spec("after=200,p=0.01,seed=3,msg=gpu lost");
  EXPECT_EQ(parsed.fail_after_steps, 200);
  EXPECT_DOUBLE_EQ(parsed.fail_probability, 0.01);
  EXPECT_EQ(parsed.seed, 3u);
  EXPECT_EQ(parsed.message, "gpu lost");
  EXPECT_THROW(parse_fault_spec("after=x"), InvalidArgument);
  EXPECT_THROW(parse_fault_spec("when=3"), InvalidArgument);
}

TEST(EngineElasticity, LosingOneOfThreeDevicesStillConverges) {
  test::EngineProblem p = test::small_problem(2048, 4096);
  auto comm = make_host_communicator();
  // Long enough for both runs to reach the plateau. Batches go out in slot order: under the
  // dynamic pull a slowed third device (two tests sharing the cores) could end the run
  // before its 40th step, and the failure would never happen.
  TrainOptions o = elastic_options();
  o.max_epochs = 30.0;
  o.deterministic = true;

  auto clean_devices = test::cpu_devices({"cpu:0", "cpu:1", "cpu:2"}, p.config);
  const TrainResult clean = train(clean_devices, *comm, p.train, p.test, o);

  auto devices = test::cpu_devices({"cpu:0", "cpu:1", "cpu:2"}, p.config);
  FaultSpec spec;
  spec.fail_after_steps = 40;  // about two epochs in
  devices[2] = make_faulty_device(std::move(devices[2]), spec);
  const TrainResult faulty = train(devices, *comm, p.train, p.test, o);

  ASSERT_EQ(faulty.devices.size(), 3u);
  EXPECT_TRUE(faulty.devices[0].alive);
  EXPECT_TRUE(faulty.devices[1].alive);
  EXPECT_FALSE(faulty.devices[2].alive);
  EXPECT_NE(faulty.devices[2].failure.find("injected device failure"), std::string::npos)
      << faulty.devices[2].failure;
  EXPECT_EQ(faulty.devices[2].updates, 40);
  EXPECT_EQ(faulty.stop, StopReason::kMaxEpochs);
  EXPECT_GE(faulty.epochs, o.max_epochs);
  // After the failure the merge weights renormalise over the two survivors.
  const RoundRecord& last = faulty.rounds.back();
  EXPECT_EQ(last.weights[2], 0.0);
  EXPECT_NEAR(last.weights[0] + last.weights[1], 1.0, 1e-12);
  const double p1_clean = clean.final_metrics.p_at(1), p1_faulty = faulty.final_metrics.p_at(1);
  std::printf("P@1 clean %.4f, with a failure %.4f\n", p1_clean, p1_faulty);
  EXPECT_GT(p1_clean, 0.9);
  EXPECT_NEAR(p1_faulty, p1_clean, 0.01);  // within one point of the clean run
}

TEST(EngineElasticity, SyncSurvivesAFailureMidStep) {
  test::EngineProblem p = test::small_problem(1024, 256);
  auto comm = make_host_communicator();
  auto devices = test::cpu_devices({"cpu:0", "cpu:1", "cpu:2"}, p.config);
  FaultSpec spec;
  spec.fail_after_steps = 5;
  devices[1] = make_faulty_device(std::move(devices[1]), spec);
  TrainOptions o = elastic_options();
  o.algo = Algo::kSync;
  o.max_epochs = 3.0;
  const TrainResult r = train(devices, *comm, p.train, p.test, o);
  EXPECT_FALSE(r.devices[1].alive);
  EXPECT_EQ(r.devices[1].updates, 5);
  // The void step's points were requeued: survivors trained every consumed point.
  EXPECT_EQ(r.devices[0].samples, r.devices[2].samples);
  EXPECT_EQ(r.devices[0].samples + r.devices[2].samples + r.devices[1].samples, r.samples);
  EXPECT_GT(r.final_metrics.p_at(1), 0.3);
}

TEST(EngineElasticity, LosingEveryDeviceFailsWithEachMessage) {
  test::EngineProblem p = test::small_problem(512, 64);
  auto comm = make_host_communicator();
  auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
  FaultSpec a, b;
  a.fail_after_steps = 3;
  a.message = "first card fell off the bus";
  b.fail_after_steps = 6;
  b.message = "second card out of memory";
  devices[0] = make_faulty_device(std::move(devices[0]), a);
  devices[1] = make_faulty_device(std::move(devices[1]), b);
  try {
    train(devices, *comm, p.train, p.test, elastic_options());
    FAIL() << "training went on without devices";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("first card fell off the bus"), std::string::npos) << what;
    EXPECT_NE(what.find("second card out of memory"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace hetsgd
