// A tenant's job ends as `hetsgd train` ends a run (TrainingJob::finish, run_pipeline from the
// kept state): the model selected on its validation rows over every round, calibrated, with
// the test metrics of the model it returns and no further training.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/evaluation.h"
#include "core/engine/training_job.h"
#include "datasets/validation_split.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

TEST(EngineJobFinish, TheFinishedModelIsTheSelectedOneCalibratedAndItsMetricsAreItsOwn) {
  test::EngineProblem p = test::small_problem(2048, 256, OptimizerKind::kAdam);
  auto [train, val] = datasets::split_validation(p.train, 0.2, 3);
  TrainOptions o = test::every_round_options();
  o.max_rounds = 24;
  o.round_samples = 256;
  // Batches planned in slot order and rounds ended by step counts: the same rounds, the same
  // curve and the same best round on any machine.
  o.deterministic = true;
  CalibrationOptions c;
  c.forest = 0.0;       // no forest on 32 labels' toy rows: the tail weight is the choice
  c.linear = 0.0;       // nor linear classifiers
  c.tail_weight = 0.5;  // given: the saved model must carry it
  TrainingJob job(std::move(train), p.test, p.config, o, std::move(val), c);
  EXPECT_FALSE(job.finish(DeviceId::cpu(0), test::cpu_maker()).has_value()) << "never trained";
  // Two rounds of the share on other device sets: 24 steps on two devices, then the rest of
  // the job's 24 rounds on one.
  test::StepBudget budget;
  job.set_stop(budget.flag());
  budget.reset(24);
  job.run_for(600.0, {DeviceId::cpu(0), DeviceId::cpu(1)}, test::counted_maker(&budget));
  ASSERT_FALSE(job.finished());
  budget.reset(1 << 30);
  job.run_for(600.0, {DeviceId::cpu(1)}, test::counted_maker(&budget));
  ASSERT_TRUE(job.finished());
  const index_t trained = job.state().cursor.consumed;

  std::optional<RunOutcome> out = job.finish(DeviceId::cpu(0), test::cpu_maker());
  ASSERT_TRUE(out.has_value());
  const TrainResult& r = out->result;
  EXPECT_EQ(r.samples, trained) << "finishing must not train";
  ASSERT_TRUE(r.has_val);
  // Keep-best over every round of every run_for(): the curve's last best evaluation.
  index_t best_round = -1;
  for (const EvalRecord& e : job.evals()) best_round = e.best ? e.round : best_round;
  ASSERT_GE(best_round, 1);
  ASSERT_LT(best_round, job.state().round) << "the last centre would pass for the selected one";
  EXPECT_EQ(r.selected_round, best_round);
  EXPECT_EQ(out->calibration.tail_weight, 0.5);

  // The reported test metrics are the returned model's, the prior folded in.
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  devices[0]->write_params(out->model.params.data());
  const RankingMetrics again = evaluate(*devices[0], p.test, o.eval_topk, o.eval_batch);
  EXPECT_DOUBLE_EQ(again.p_at(1), r.final_metrics.p_at(1));
  EXPECT_DOUBLE_EQ(again.p_at(5), r.final_metrics.p_at(5));
}

}  // namespace
}  // namespace hetsgd
