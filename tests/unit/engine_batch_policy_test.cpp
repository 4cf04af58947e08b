#include "core/engine/batch_policy.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/engine/lr_schedule.h"
#include "core/error.h"

namespace hetsgd {
namespace {

TEST(EngineBatchPolicy, PaperStepsTowardsEqualUpdateCounts) {
  const std::vector<bool> all = {true, true, true};
  // Device 0 did most updates (fast): bigger batch; device 2 fewest: smaller; 1 is at 1/K.
  const auto b = paper_batch_sizes({256, 256, 256}, {50, 30, 10}, all, 32, 1024, 32);
  EXPECT_EQ(b, (std::vector<index_t>{288, 256, 224}));
  // Bounds hold.
  const auto c = paper_batch_sizes({1024, 256, 32}, {50, 30, 10}, all, 32, 1024, 32);
  EXPECT_EQ(c, (std::vector<index_t>{1024, 256, 32}));
  // A failed slot keeps its size and does not count in K.
  const auto d = paper_batch_sizes({256, 256, 256}, {10, 10, 0}, {true, true, false}, 32, 1024, 32);
  EXPECT_EQ(d, (std::vector<index_t>{256, 256, 256}));
}

TEST(EngineBatchPolicy, ProportionalHoldsTheTotalAndFollowsThroughput) {
  const auto b =
      proportional_batch_sizes({256, 256}, {3000.0, 1000.0}, {true, true}, 512, 32, 1024);
  EXPECT_EQ(b, (std::vector<index_t>{384, 128}));
  // Clamping to [b_min, b_max].
  const auto c = proportional_batch_sizes({256, 256}, {1e6, 1.0}, {true, true}, 512, 32, 1024);
  EXPECT_EQ(c, (std::vector<index_t>{512, 32}));
  // Unmeasured devices keep their size.
  const auto d = proportional_batch_sizes({100, 200}, {0.0, 0.0}, {true, true}, 512, 32, 1024);
  EXPECT_EQ(d, (std::vector<index_t>{100, 200}));
}

TEST(EngineBatchPolicy, SizerKeepsWarmupSizeThenAppliesPolicy) {
  TrainOptions o;
  o.b0 = 128;
  o.warmup_epochs = 1.0;
  o.warmup_batch = 32;
  o.batch_policy = BatchPolicy::kProportional;
  BatchSizer s(o, 2);
  EXPECT_EQ(s.sizes(), (std::vector<index_t>{32, 32}));
  const std::vector<bool> all = {true, true};
  s.observe_round({30, 10}, {960, 320}, {1.0, 1.0}, all, /*warmup=*/true);
  EXPECT_EQ(s.sizes(), (std::vector<index_t>{32, 32}));
  EXPECT_DOUBLE_EQ(s.throughput()[0], 960.0);
  s.observe_round({30, 10}, {960, 320}, {1.0, 1.0}, all, /*warmup=*/false);
  EXPECT_TRUE(s.past_warmup());
  EXPECT_EQ(s.sizes(), (std::vector<index_t>{192, 64}));  // 256 split 3:1

  TrainOptions p = o;
  p.batch_policy = BatchPolicy::kPaper;
  BatchSizer q(p, 2);
  q.observe_round({30, 10}, {960, 320}, {1.0, 1.0}, all, /*warmup=*/false);
  EXPECT_EQ(q.sizes(), (std::vector<index_t>{128, 128}));  // the walk starts from b0
  q.observe_round({30, 10}, {960, 320}, {1.0, 1.0}, all, /*warmup=*/false);
  EXPECT_EQ(q.sizes(), (std::vector<index_t>{160, 96}));
}

TEST(EngineLrSchedule, WarmupRampScalingAndDecay) {
  TrainOptions o;
  o.lr0 = 0.1;
  o.b0 = 100;
  o.warmup_epochs = 2.0;
  o.warmup_start = 0.01;
  o.lambda = 0.5;
  const index_t n = 1000;
  const double epoch = n;  // the decay's unit where labels are seen often enough
  EXPECT_NEAR(learning_rate(o, LrScaling::kLinear, 100, 0, n, epoch), 0.001, 1e-12);
  EXPECT_NEAR(learning_rate(o, LrScaling::kLinear, 100, 1000, n, epoch), 0.1 * (0.01 + 0.99 * 0.5),
              1e-12);
  EXPECT_NEAR(learning_rate(o, LrScaling::kLinear, 200, 2000, n, epoch), 0.2, 1e-12);
  EXPECT_NEAR(learning_rate(o, LrScaling::kSqrt, 400, 2000, n, epoch), 0.2, 1e-12);
  EXPECT_NEAR(learning_rate(o, LrScaling::kNone, 400, 2000, n, epoch), 0.1, 1e-12);
  // e = floor(T / N) = 4: 0.1 / (1 + 0.5 * (4 - 2))
  EXPECT_NEAR(learning_rate(o, LrScaling::kLinear, 100, 4999, n, epoch), 0.05, 1e-12);
  // A unit of 4 epochs, the warm-up half a unit: at 4,999 points e = 1,
  // 0.1 / (1 + 0.5 * (1 - 0.5)); at 12,000 points e = 3, 0.1 / (1 + 0.5 * (3 - 0.5)).
  EXPECT_NEAR(learning_rate(o, LrScaling::kLinear, 100, 4999, n, 4.0 * n), 0.08, 1e-12);
  EXPECT_NEAR(learning_rate(o, LrScaling::kLinear, 100, 12000, n, 4.0 * n), 0.1 / 2.25, 1e-12);
  EXPECT_EQ(resolve_lr_scaling(LrScaling::kAuto, OptimizerKind::kSgd), LrScaling::kLinear);
  EXPECT_EQ(resolve_lr_scaling(LrScaling::kAuto, OptimizerKind::kAdam), LrScaling::kSqrt);
}

// The decay's unit is the points over which the mean label is seen decay_visits (8) times,
// and never less than an epoch.
TEST(EngineLrSchedule, TheDecayCountsPassesInWhichLabelsAreSeenEnough) {
  TrainOptions o;
  EXPECT_EQ(o.decay_visits, 8.0);
  o.decay_min_points = 0;  // the floor (next test) aside
  // 1,000 rows of 2,000 label entries over 500 labels: 4 visits an epoch, a unit of 2 epochs.
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 2000, 500), 2000.0);
  // 80 visits an epoch: an epoch.
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 4000, 50), 1000.0);
  // No labels, or the clock in epochs.
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 0, 500), 1000.0);
  o.decay_visits = 0.0;
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 2000, 500), 1000.0);
  o.decay_visits = -1.0;
  EXPECT_THROW(o.validate(), InvalidArgument);
}

// ... and never less than decay_min_points (4,096): a small set's rate decays per 4,096
// points, not per epoch, whichever clock the labels ask for; 0 leaves the epoch.
TEST(EngineLrSchedule, TheDecaysUnitHasAFloorInPoints) {
  TrainOptions o;
  EXPECT_EQ(o.decay_min_points, 4096);
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 4000, 50), 4096.0);   // 80 visits an epoch
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 200, 500), 20000.0);  // 0.4 visits: 20 epochs
  EXPECT_DOUBLE_EQ(decay_unit(o, 5000, 20000, 50), 5000.0);  // more rows: an epoch
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 0, 500), 4096.0);
  // The learning rate follows it: 4,000 points of 1,000 rows are still in the first unit.
  o.lr0 = 0.1;
  const double unit = decay_unit(o, 1000, 4000, 50);
  EXPECT_DOUBLE_EQ(learning_rate(o, LrScaling::kNone, 128, 4000, 1000, unit), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, LrScaling::kNone, 128, 4096, 1000, unit), 0.1 / 1.5);
  o.decay_min_points = 0;
  EXPECT_DOUBLE_EQ(decay_unit(o, 1000, 4000, 50), 1000.0);
  o.decay_min_points = -1;
  EXPECT_THROW(o.validate(), InvalidArgument);
}

// pass_epochs() is the decay's unit in epochs, read off the training set's labels.
TEST(EngineLrSchedule, APassIsTheDecaysUnitInEpochs) {
  TrainOptions o;
  o.decay_min_points = 0;
  Dataset d;
  EXPECT_EQ(pass_epochs(o, d), 1.0);  // no rows
  d.num_labels = 8;
  // 4 rows of one label entry each over 8 labels: half a visit an epoch, a pass of 16 epochs.
  d.x_indptr = {0, 0, 0, 0, 0};
  d.y_indptr = {0, 1, 2, 3, 4};
  d.y_indices = {0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(pass_epochs(o, d), 16.0);
  o.decay_visits = 0.0;
  EXPECT_DOUBLE_EQ(pass_epochs(o, d), 1.0);
}

TEST(EngineTrainOptions, DefaultsValidateAndNamesRoundTrip) {
  TrainOptions o;
  EXPECT_NO_THROW(o.validate());
  for (const char* a : {"adaptive", "sync", "avg", "easgd"})
    EXPECT_STREQ(to_string(parse_algo(a)), a);
  for (const char* p : {"paper", "proportional", "fixed"}) {
    EXPECT_STREQ(to_string(parse_batch_policy(p)), p);
  }
  for (const char* w : {"updates", "samples", "uniform"}) {
    EXPECT_STREQ(to_string(parse_merge_weights(w)), w);
  }
  EXPECT_THROW(parse_algo("dp"), InvalidArgument);
  o.b0 = 2048;  // above b_max
  EXPECT_THROW(o.validate(), InvalidArgument);
  TrainOptions none;
  none.max_epochs = 0;
  EXPECT_THROW(none.validate(), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
