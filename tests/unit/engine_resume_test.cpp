// Checkpoint and resume through the engine, on real CPU devices.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <unistd.h>

#include "core/checkpoint.h"
#include "core/communicator.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "engine_resume_" + std::to_string(::getpid()) + "_" + name;
}

// One device, plain SGD, beta = 1: the state a checkpoint holds is the whole state, so a
// resumed run must follow the uninterrupted one exactly (the CPU device is deterministic).
TrainOptions resumable_options() {
  TrainOptions o;
  o.lr0 = 0.5;
  o.b0 = 32;
  o.b_min = 16;
  o.batch_policy = BatchPolicy::kFixed;
  o.warmup_epochs = 1.0;  // the resume point lies inside the warm-up ramp
  o.round_samples = 400;  // rounds do not align with epochs: the cursor is mid-epoch
  o.max_epochs = 0.0;
  o.eval_every_rounds = 2;
  return o;
}

TEST(EngineResume, ResumedRunEqualsTheUninterruptedRun) {
  test::EngineProblem p = test::small_problem(1000, 128, OptimizerKind::kSgd);
  auto comm = make_host_communicator();
  const std::string path = temp_path("a.ckpt");

  TrainOptions full = resumable_options();
  full.max_rounds = 6;
  auto d_full = test::cpu_devices({"cpu:0"}, p.config);
  const TrainResult want = train(d_full, *comm, p.train, p.test, full);

  TrainOptions first = resumable_options();
  first.max_rounds = 3;
  first.checkpoint_path = path;
  auto d_first = test::cpu_devices({"cpu:0"}, p.config);
  const TrainResult half = train(d_first, *comm, p.train, p.test, first);
  const TrainCheckpoint c = load_checkpoint(path);
  EXPECT_EQ(c.round, 3);
  EXPECT_EQ(c.cursor.consumed, half.samples);
  EXPECT_EQ(c.centre, half.centre);
  EXPECT_EQ(c.cursor.epoch, 1);  // 3 rounds x ~400 points of 1000: in the second epoch

  TrainOptions second = resumable_options();
  second.max_rounds = 6;
  second.resume_path = path;
  auto d_second = test::cpu_devices({"cpu:0"}, p.config);
  const TrainResult got = train(d_second, *comm, p.train, p.test, second);
  EXPECT_TRUE(got.resumed);
  EXPECT_EQ(got.rounds_done, 6);
  EXPECT_EQ(got.rounds.size(), 3u);
  EXPECT_EQ(got.samples, want.samples);
  EXPECT_GE(got.train_seconds, c.train_seconds);
  ASSERT_EQ(got.centre.size(), want.centre.size());
  EXPECT_EQ(got.centre, want.centre);
  EXPECT_EQ(got.final_metrics.p_at(1), want.final_metrics.p_at(1));
  std::remove(path.c_str());
}

TEST(EngineResume, RefusesACheckpointOfOtherOptionsOrModel) {
  test::EngineProblem p = test::small_problem(500, 64, OptimizerKind::kSgd);
  auto comm = make_host_communicator();
  const std::string path = temp_path("b.ckpt");
  TrainOptions o = resumable_options();
  o.max_rounds = 1;
  o.checkpoint_path = path;
  auto d = test::cpu_devices({"cpu:0"}, p.config);
  train(d, *comm, p.train, p.test, o);

  TrainOptions other = resumable_options();
  other.max_rounds = 2;
  other.lr0 = 0.25;
  other.resume_path = path;
  auto d2 = test::cpu_devices({"cpu:0"}, p.config);
  try {
    train(d2, *comm, p.train, p.test, other);
    FAIL() << "resumed with another learning rate";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("lr0=0.25"), std::string::npos) << e.what();
  }

  ModelConfig wider = p.config;
  wider.hidden = {48};
  TrainOptions same = resumable_options();
  same.max_rounds = 2;
  same.resume_path = path;
  auto d3 = test::cpu_devices({"cpu:0"}, wider);
  EXPECT_THROW(train(d3, *comm, p.train, p.test, same), InvalidArgument);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hetsgd
