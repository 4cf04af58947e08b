// The round-batch learning rate of model-averaging steps (TrainOptions::lr_batch), the automatic
// round size, and runs that keep going past their target P@1 (compare's common budget).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "core/communicator.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

TrainOptions sgd_step_options(Algo algo, int k) {
  TrainOptions o;
  o.algo = algo;
  o.lr0 = 0.2;
  o.b0 = 32;
  o.lr_scaling = LrScaling::kLinear;
  o.warmup_epochs = 0.0;
  o.eval_at_start = false;
  o.max_epochs = 0.0;
  o.round_samples = k * o.b0;  // one b0 batch per device per round
  o.max_rounds = 3;
  return o;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
  return d;
}

// The derivation behind LrBatch::kRound: averaging K replicas that each took one SGD step of
// lr0 * s(B / b0) on b0 points is one step of that rate on the B = K * b0 points, i.e. exactly
// what sync does. With the paper's per-device rate the centre moves K times less.
TEST(EngineLrBatch, OneLocalStepPerRoundAveragesToTheSyncStep) {
  test::EngineProblem p = test::small_problem(1024, 128, OptimizerKind::kSgd);
  const int k = 2;
  auto run = [&](Algo algo, LrBatch lr_batch) {
    auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
    auto comm = make_host_communicator();
    TrainOptions o = sgd_step_options(algo, k);
    o.lr_batch = lr_batch;
    return train(devices, *comm, p.train, p.test, o).centre;
  };
  const std::vector<float> sync = run(Algo::kSync, LrBatch::kRound);
  const std::vector<float> round = run(Algo::kAvg, LrBatch::kRound);
  const std::vector<float> device = run(Algo::kAvg, LrBatch::kDevice);
  auto fresh = test::cpu_devices({"cpu:0"}, p.config);
  std::vector<float> init(sync.size());
  fresh[0]->read_params(init.data());
  const double moved = max_abs_diff(sync, init);
  ASSERT_GT(moved, 1e-3) << "sync did not train";
  EXPECT_LT(max_abs_diff(round, sync), 1e-4 * std::max(1.0, moved))
      << "round-batch lr: the average of one local step each must be sync's step";
  EXPECT_GT(max_abs_diff(device, sync), 0.1 * moved)
      << "per-device lr is a K times shorter step: the test would not tell the rules apart";
}

// Adaptive with unequal batch sizes: every device steps with the rate of the round's global
// batch sum_j b_j (kRound), or with its own b_i (kDevice). The sizes are made unequal without
// the clock: one device is held to at most a batch a round (test::GatedPair), so `paper`
// walks the free one's batch up by 32 and the held one's down, 64 + 2 x 32 = 128 and 16 (b_min)
// in the third round.
TEST(EngineLrBatch, AdaptiveDevicesUseTheRoundBatchRate) {
  for (LrBatch mode : {LrBatch::kRound, LrBatch::kDevice}) {
    TrainOptions o = test::quick_options();
    o.batch_policy = BatchPolicy::kPaper;
    o.lr_batch = mode;
    const TrainResult r = test::train_gated_pair(o, 3);
    ASSERT_EQ(r.rounds.size(), 3u);
    const RoundRecord& last = r.rounds.back();
    const std::array<index_t, 2> sizes = {128, 16};
    ASSERT_EQ(last.devices[0].batch_size, sizes[0]);
    for (int i = 0; i < 2; ++i) {
      if (last.devices[i].updates == 0) continue;  // the held device may get no batch
      const index_t b = mode == LrBatch::kRound ? sizes[0] + sizes[1] : sizes[i];
      // small_problem runs Adam: auto scaling is the square root.
      EXPECT_NEAR(last.devices[i].lr, o.lr0 * std::sqrt(static_cast<double>(b) / 64.0), 1e-12)
          << to_string(mode) << " device " << i;
    }
  }
}

TEST(EngineLrBatch, NamesRoundTripAndEnterTheTrajectory) {
  for (const char* m : {"round", "device"}) EXPECT_STREQ(to_string(parse_lr_batch(m)), m);
  EXPECT_THROW(parse_lr_batch("global"), InvalidArgument);
  TrainOptions a, b;
  b.lr_batch = LrBatch::kDevice;
  EXPECT_NE(a.trajectory_text(), b.trajectory_text()) << "a resume must refuse a changed rule";
  EXPECT_EQ(a.lr_batch, LrBatch::kRound);
}

TEST(EngineRoundSize, AutoHoldsEightGlobalBatchesAndSixteenthsOfLargeSets) {
  TrainOptions o;                                                 // b0 = 128
  EXPECT_EQ(resolve_round_samples(o, 2, 12920), 8 * 2 * 128);     // delicious, 2 devices
  EXPECT_EQ(resolve_round_samples(o, 2, 1000000), 1000000 / 16);  // large set: N / 16
  EXPECT_EQ(resolve_round_samples(o, 4, 1000), 1000);             // capped at N
  o.round_samples = 777;
  EXPECT_EQ(resolve_round_samples(o, 2, 12920), 777);
  // About two evaluations per epoch.
  EXPECT_EQ(resolve_eval_every(o, 2048, 12920), 3);
}

// Runs of at most `epochs` that evaluate every round against a P@1 target of 0.2 that
// small_problem() reaches early, stopping there when `stop`.
TrainOptions target_options(double epochs, bool stop) {
  TrainOptions o;
  o.lr0 = 1e-2;
  o.b0 = 64;
  o.warmup_epochs = 0.0;
  o.max_epochs = epochs;
  o.eval_every_rounds = 1;
  o.target_p1 = 0.2;
  o.stop_at_target = stop;
  return o;
}

// Stopping at the target reads the validation curve (here the test set serves as both);
// without validation data the target's time is reported and training goes on. The pair is
// deterministic (batches planned in slot order), so where the target is reached follows the
// seed, not the threads' timing, and "past the target" is read in samples, not seconds.
TEST(EngineTarget, KeepsTrainingPastTheTargetWhenAsked) {
  test::EngineProblem p = test::small_problem(2048, 512);
  for (bool stop : {true, false}) {
    auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
    auto comm = make_host_communicator();
    TrainOptions o = target_options(6.0, stop);
    o.deterministic = true;
    const TrainResult r =
        train(test::raw(devices), *comm, TrainData{&p.train, &p.test, &p.test}, o);
    ASSERT_GE(r.time_to_target_s, 0.0) << "target not reached";
    // The first evaluation at or above the target: its time is the time to target.
    const EvalRecord* reached = nullptr;
    for (const EvalRecord& e : r.evals) {
      if (e.metrics.p_at(1) >= o.target_p1) {
        reached = &e;
        break;
      }
    }
    ASSERT_NE(reached, nullptr);
    EXPECT_EQ(reached->time_s, r.time_to_target_s);
    if (stop) {
      EXPECT_EQ(r.stop, StopReason::kTarget);
      EXPECT_LT(r.epochs, 6.0);
      EXPECT_EQ(r.samples, reached->samples);  // stopped at that evaluation
    } else {
      EXPECT_EQ(r.stop, StopReason::kMaxEpochs);
      EXPECT_GE(r.epochs, 6.0);
      EXPECT_GT(r.samples, reached->samples);  // trained on past it
      EXPECT_GE(r.train_seconds, r.time_to_target_s);
    }
  }
}

TEST(EngineTarget, WithoutValidationTheTargetIsReportedNeverActedOn) {
  test::EngineProblem p = test::small_problem(2048, 512);
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  auto comm = make_host_communicator();
  const TrainOptions o = target_options(3.0, true);
  const TrainResult r = train(devices, *comm, p.train, p.test, o);
  ASSERT_GE(r.time_to_target_s, 0.0) << "target not reached";
  EXPECT_EQ(r.stop, StopReason::kMaxEpochs);
  EXPECT_GE(r.epochs, 3.0);
}

}  // namespace
}  // namespace hetsgd
