#include <gtest/gtest.h>

#include "core/engine/evaluation.h"
#include "core/model_config.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

ModelConfig shape(index_t labels, index_t hidden) {
  ModelConfig c = test::fixed_model();
  c.num_features = 1000;
  c.num_labels = labels;
  c.hidden = {hidden};
  return c;
}

TEST(EvaluationPlan, SmallShapesEvaluateEveryRowAndNeedNoFinalPass) {
  const TrainOptions o;  // eval_max_points auto
  const ModelConfig delicious = shape(983, 512);
  EXPECT_EQ(in_training_eval_rows(o, 3185, delicious), 3185);
  EXPECT_EQ(final_eval_rows(o, 3185, delicious), 0);
  EXPECT_FALSE(o.eval_at_start);
}

TEST(EvaluationPlan, ExtremeShapesSampleInTrainingAndBoundTheFinalPass) {
  TrainOptions o;
  const ModelConfig amazon = shape(670091, 128);
  // 2 L h = 171.5 MFLOP a row: 1e11 flops are 583 rows, below the 1,000-row floor.
  EXPECT_EQ(in_training_eval_rows(o, 153025, amazon), kMinEvalRows);
  EXPECT_EQ(final_eval_rows(o, 153025, amazon), 5829);  // 1e12 flops
  o.exact_eval = true;
  EXPECT_EQ(final_eval_rows(o, 153025, amazon), 153025);
  // An explicit --eval-max-points means what it says.
  o.exact_eval = false;
  o.eval_max_points = 0;
  EXPECT_EQ(in_training_eval_rows(o, 153025, amazon), 153025);
  EXPECT_EQ(final_eval_rows(o, 153025, amazon), 0);
  o.eval_max_points = 200;
  EXPECT_EQ(in_training_eval_rows(o, 153025, amazon), 200);
}

// With validation data the test set's in-training points score no more rows than the
// validation set (at least 1,000), and the final pass then scores the selected model on all of
// them; the budget's sample, the period and the schedule stay as in_training_eval_rows() says.
TEST(EvaluationPlan, TheTestCurveScoresNoMoreRowsThanValidation) {
  TrainOptions o;
  const ModelConfig srb = shape(6806, 512), deps = shape(22912, 512);
  EXPECT_EQ(in_training_eval_rows(o, 3122, srb), 3122);  // within the budget
  EXPECT_EQ(in_training_test_rows(o, 3122, 941, srb), kMinEvalRows);
  EXPECT_EQ(final_eval_rows(o, 3122, srb, 941), 3122);
  EXPECT_EQ(in_training_test_rows(o, 3122, 0, srb), 3122);  // no validation: as before
  EXPECT_EQ(final_eval_rows(o, 3122, srb), 0);
  EXPECT_EQ(in_training_test_rows(o, 3122, 5000, srb), 3122);  // never past the set
  EXPECT_EQ(in_training_eval_rows(o, 13952, deps), 4262);      // the budget's sample
  EXPECT_EQ(in_training_test_rows(o, 13952, 2000, deps), 2000);
  EXPECT_EQ(final_eval_rows(o, 13952, deps, 2000), 13952);  // 328 GFLOP: exactly, every row
  // An explicit --eval-max-points means what it says.
  o.eval_max_points = 0;
  EXPECT_EQ(in_training_test_rows(o, 3122, 941, srb), 3122);
  EXPECT_EQ(final_eval_rows(o, 3122, srb, 941), 0);
  o.eval_max_points = 3000;
  EXPECT_EQ(in_training_test_rows(o, 3122, 941, srb), 3000);
}

TEST(EvaluationPlan, AutoModelFollowsTheLabelCountAndMemory) {
  EXPECT_EQ(auto_model(983, 100000).hidden, std::vector<index_t>{512});
  EXPECT_EQ(auto_model(983, 100000).dropout, 0.5f);
  EXPECT_EQ(auto_model(983, 100000).label_smoothing, 0.3f);
  EXPECT_EQ(auto_model(100000, 100000).label_smoothing, 0.3f);
  EXPECT_EQ(auto_model(100001, 100000).label_smoothing, 0.0f);
  EXPECT_EQ(auto_model(670091, 100000).hidden, std::vector<index_t>{128});
  EXPECT_EQ(auto_model(670091, 100000).dropout, 0.0f);
  EXPECT_EQ(auto_model(670091, 100000).label_smoothing, 0.0f);
  EXPECT_EQ(auto_model(670091, 100000, 24e9).hidden, std::vector<index_t>{128});
  EXPECT_EQ(auto_model(670091, 100000, 3e9).hidden, std::vector<index_t>{64});
  // The wide model narrows where its layers would not fit kWideModelBytes: amazoncat-13k's
  // 203,882 features take 256; debian-deps (42,916) and wiki10-31k (101,938) keep 512.
  EXPECT_EQ(auto_model(13330, 100000, 0.0, 203882).hidden, std::vector<index_t>{256});
  EXPECT_EQ(auto_model(22912, 100000, 0.0, 42916).hidden, std::vector<index_t>{512});
  EXPECT_EQ(auto_model(30938, 100000, 0.0, 101938).hidden, std::vector<index_t>{512});
  EXPECT_EQ(auto_model(30938, 100000, 0.0, 10000000).hidden, std::vector<index_t>{128});
  EXPECT_EQ(auto_model(13330, 100000, 0.0, 203882).dropout, 0.5f);
}

}  // namespace
}  // namespace hetsgd
