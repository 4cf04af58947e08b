// A tenant's job across enforcement rounds: the state (cursor, optimiser, batch sizes) is kept
// between run_for() calls, whatever devices each round gives it.
#include "core/engine/training_job.h"

#include <atomic>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/forwarding_device.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

// A round's time limit far beyond its step budget: only a hang reaches it.
constexpr double kHangBound = 600.0;

TEST(EngineTrainingJob, StateAndCurveContinueAcrossRoundsOnChangingDevices) {
  test::EngineProblem p = test::small_problem(2048, 256, OptimizerKind::kAdam);
  TrainOptions o;
  o.lr0 = 0.01;
  o.max_epochs = 0.0;
  o.eval_every_rounds = 1;
  // Batches planned in slot order: in round 2 each device trains its part of every engine
  // round, so cpu:1 has steps of its own whatever the threads' timing.
  o.deterministic = true;
  TrainingJob job(p.train, p.test, p.config, o);
  test::StepBudget budget;
  job.set_stop(budget.flag());

  // Three epochs of 16 batches of b0 = 128: a trained model, the same on every run.
  budget.reset(48);
  const JobRound r1 = job.run_for(kHangBound, {DeviceId::cpu(0)}, test::counted_maker(&budget));
  EXPECT_FALSE(r1.finished);
  ASSERT_GT(r1.samples, 0);
  const TrainState after1 = job.state();
  EXPECT_EQ(after1.cursor.consumed, r1.samples);
  ASSERT_EQ(after1.slots.size(), 1u);
  const std::int64_t steps1 = after1.slots[0].optimizer.steps;
  EXPECT_GT(steps1, 0);
  const double p1_end1 = job.evals().back().metrics.p_at(1);
  const double p1_start = job.evals().front().metrics.p_at(1);  // the initial model

  // Round 2 on another device set: cpu:0 keeps its moments, cpu:1 joins with them.
  budget.reset(16);
  const JobRound r2 =
      job.run_for(kHangBound, {DeviceId::cpu(0), DeviceId::cpu(1)}, test::counted_maker(&budget));
  ASSERT_GT(r2.samples, 0);
  const TrainState& after2 = job.state();
  EXPECT_EQ(after2.cursor.consumed, r1.samples + r2.samples);  // the cursor was not reseeded
  EXPECT_GT(after2.round, after1.round);
  // The training clock goes on from round 1's end (restarted, round 2's time would be
  // negative).
  EXPECT_GT(r2.train_seconds, 0.0);
  EXPECT_DOUBLE_EQ(after2.train_seconds, after1.train_seconds + r2.train_seconds);
  ASSERT_EQ(after2.slots.size(), 2u);
  EXPECT_EQ(after2.slots[0].device, "cpu:0");
  EXPECT_GT(after2.slots[0].optimizer.steps, steps1);
  EXPECT_GT(after2.slots[1].optimizer.steps, steps1);  // started from cpu:0's statistics

  // The curve continues: round 2's first evaluation comes after round 1's last, and is no
  // worse than it by more than noise (a restart would fall back towards the initial model).
  ASSERT_FALSE(r2.evals.empty());
  EXPECT_GT(r2.evals.front().samples, r1.samples);
  EXPECT_GE(r2.evals.front().time_s, after1.train_seconds);
  EXPECT_GT(p1_end1, p1_start + 0.1);
  EXPECT_GE(r2.evals.front().metrics.p_at(1), p1_end1 - 0.05);
  for (std::size_t i = 1; i < job.evals().size(); ++i) {
    EXPECT_GE(job.evals()[i].samples, job.evals()[i - 1].samples);
    EXPECT_GE(job.evals()[i].time_s, job.evals()[i - 1].time_s);
  }
}

TEST(EngineTrainingJob, FinishesAtItsOwnEpochLimitAndThenDoesNothing) {
  test::EngineProblem p = test::small_problem(512, 64, OptimizerKind::kAdam);
  TrainOptions o;
  o.max_epochs = 1.0;
  TrainingJob job(p.train, p.test, p.config, o);
  job.run_for(30.0, {DeviceId::cpu(0)}, test::cpu_maker());
  EXPECT_TRUE(job.finished());
  EXPECT_GE(job.state().cursor.consumed, 512);
  const JobRound more = job.run_for(1.0, {DeviceId::cpu(0)}, test::cpu_maker());
  EXPECT_EQ(more.samples, 0);
}

}  // namespace
}  // namespace hetsgd
