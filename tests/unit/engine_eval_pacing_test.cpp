// The evaluation period of a run (TrainingEvaluations, core/engine/README.md §Rounds), checked
// without training: R = round(N / (2 S)) when every evaluated row is scored; when the sets are
// samples, lengthened so that their evaluations take at most kEvalShare (8%) of the training,
// both costs in flops (2 L h a scored row; 3 forward passes a training sample).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/dataset.h"
#include "core/engine/train_options.h"
#include "core/engine/trainer.h"
#include "core/engine/training_evaluations.h"
#include "core/model_config.h"

namespace hetsgd {
namespace {

constexpr index_t kFeatures = 100;
constexpr index_t kLabels = 200000;
constexpr index_t kHidden = 16;
constexpr index_t kRowNnz = 10;

// `rows` rows of kRowNnz features and one label each: only the shape and the counts matter.
Dataset rows_of(index_t rows) {
  Dataset d;
  d.num_features = kFeatures;
  d.num_labels = kLabels;
  for (index_t r = 0; r < rows; ++r) {
    for (index_t j = 0; j < kRowNnz; ++j) {
      d.x_indices.push_back(static_cast<col_t>((r + 7 * j) % kFeatures));
      d.x_values.push_back(1.0f);
    }
    std::sort(d.x_indices.end() - kRowNnz, d.x_indices.end());
    d.x_indptr.push_back(d.nnz());
    d.y_indices.push_back(static_cast<col_t>(r % kLabels));
    d.y_indptr.push_back(d.label_nnz());
  }
  return d;
}

ModelConfig full_model() {
  ModelConfig c;
  c.num_features = kFeatures;
  c.num_labels = kLabels;
  c.hidden = {kHidden};
  c.output_layer = OutputLayer::kFull;
  return c;
}

struct EngineEvalPacing : ::testing::Test {
  Dataset train = rows_of(4000), test = rows_of(5000), val = rows_of(2000);
  TrainCallbacks callbacks;
  ModelConfig config = full_model();

  int period(const TrainOptions& o, index_t round_samples, const Dataset* v) {
    TrainingEvaluations evals(o, callbacks, config, train, test, v);
    evals.set_round_samples(round_samples);
    return evals.period();
  }
};

TEST_F(EngineEvalPacing, EveryRowScoredKeepsTwoEvaluationsAnEpoch) {
  TrainOptions o;
  o.eval_max_points = 0;               // every row: no sample, no pacing
  EXPECT_EQ(period(o, 250, &val), 8);  // 4000 / (2 x 250)
  EXPECT_EQ(period(o, 500, &val), 4);
  EXPECT_EQ(period(o, 4000, &val), 1);  // at least one
}

TEST_F(EngineEvalPacing, SampledSetsAreEvaluatedWithinTheirShareOfTheFlops) {
  TrainOptions o;
  o.eval_max_points = 1000;  // a sample of each set
  // An evaluation: 2 x 1,000 rows x 2 L h = 1.28e10 flops. A training sample:
  // 3 (2 x 10 x 16 + 2 x 16 x 200,000) = 19,200,960 flops, so a round of 250 is 4.80024e9
  // and 8% of it 3.840192e8: ceil(33.33) = 34 rounds, more than the base 8.
  EXPECT_EQ(period(o, 250, &val), 34);
  // S doubled: the rounds cost twice as much, the period halves (ceil(16.67)).
  EXPECT_EQ(period(o, 500, &val), 17);
  // Without validation data half the evaluation: ceil(16.67) at S = 250.
  EXPECT_EQ(period(o, 250, nullptr), 17);
  // Small rounds: both grow, the base to 80 rounds, the share's to ceil(333.3).
  EXPECT_EQ(period(o, 25, &val), 334);
  // Rounds so large that the share fits within one: the base period stands.
  EXPECT_EQ(period(o, 4000, &val), 3);  // ceil(2.08) = 3 > base 1
}

TEST_F(EngineEvalPacing, AShareWithinTheBasePeriodKeepsIt) {
  TrainOptions o;
  o.eval_max_points = 100;  // 1.28e9 flops an evaluation: ceil(3.33) = 4 rounds of 250
  EXPECT_EQ(period(o, 250, &val), 8);
}

TEST_F(EngineEvalPacing, AGivenPeriodIsKeptWhateverTheCost) {
  TrainOptions o;
  o.eval_max_points = 1000;
  o.eval_every_rounds = 3;
  EXPECT_EQ(period(o, 250, &val), 3);
  EXPECT_EQ(period(o, 25, &val), 3);
}

TEST_F(EngineEvalPacing, SetRoundSamplesRecomputesThePeriod) {
  TrainOptions o;
  o.eval_max_points = 1000;
  TrainingEvaluations evals(o, callbacks, config, train, test, &val);
  evals.set_round_samples(250);
  EXPECT_EQ(evals.period(), 34);
  evals.set_round_samples(500);  // S grew during the run
  EXPECT_EQ(evals.period(), 17);
}

// A resumed run keeps the uninterrupted run's cadence: the last periodic evaluation is the
// period's last multiple at or before the round it starts from.
TEST_F(EngineEvalPacing, DueEveryPeriodFromStartOrResume) {
  TrainOptions o;
  o.eval_every_rounds = 4;
  TrainingEvaluations evals(o, callbacks, config, train, test, &val);
  evals.set_round_samples(250);
  evals.start_at(0);
  std::vector<int> due;
  for (int round = 1; round <= 13; ++round) {
    if (evals.due(round)) {
      due.push_back(round);
      evals.evaluated(round);
    }
  }
  EXPECT_EQ(due, (std::vector<int>{4, 8, 12}));
  evals.start_at(10);  // resumed at round 10: round 8 was evaluated
  EXPECT_FALSE(evals.due(11));
  EXPECT_TRUE(evals.due(12));
  evals.start_at(12);
  EXPECT_FALSE(evals.due(15));
  EXPECT_TRUE(evals.due(16));
}

}  // namespace
}  // namespace hetsgd
