// calibrate(): whichever end each grid picks, the metrics it leaves are those of the model it
// leaves to be saved (loaded again on a fresh device and ranked through its Ranker), a
// deferred final evaluation included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/calibrate.h"
#include "core/engine/calibrate_grid.h"
#include "core/engine/evaluation.h"
#include "core/model/ranker.h"
#include "core/random.h"
#include "kernels/cpu/api.h"
#include "tests/common/small_models.h"
#include "tests/common/topic_rows.h"

namespace hetsgd {
namespace {

// Rows of 4 topics (3 of a topic's 8 features; its label, and label 4 on every row), and
// labels 5.. each on one training row at random: noise no feature predicts, and the rarest
// labels, so a large propensity prior ranks them first and costs precision.
// The first `headless` rows leave label 4 out: rows whose ranking the head label, first for
// the network trained on rows that all carry it, only spoils, so that a prior pushing it down
// gains on them.
Dataset skewed(index_t rows, bool noise, std::uint64_t seed, index_t headless = 0) {
  Dataset d;
  d.num_features = 32;
  d.num_labels = 5 + 40;
  SplitMix64 rng(seed);
  for (index_t r = 0; r < rows; ++r) {
    const auto g = static_cast<col_t>(r % 4);
    std::vector<col_t> labels = {g};
    if (r >= headless) labels.push_back(4);
    if (noise && r < 40) labels.push_back(5 + static_cast<col_t>(r));
    test::add_topic_row(d, g, rng, labels);
  }
  return d;
}

struct Fixture {
  Dataset train = skewed(400, true, 1), val = skewed(80, false, 2), test = skewed(80, false, 3);
  ModelConfig config = test::fixed_model();
  std::unique_ptr<Device> device;
  TrainOptions options;
  TrainResult result;

  Fixture() {
    config.num_features = train.num_features;
    config.num_labels = train.num_labels;
    config.hidden = {16};
    config.loss = Loss::kSoftmax;
    device = cpu::make_device(0, config, DeviceOptions{1, false});
    CsrBatch b;
    for (int step = 0; step < 200; ++step) {
      const index_t at = (step * 32) % 384;
      slice_rows(train, at, at + 32, &b);
      device->train_step(b, 0.05f);
    }
    result.model.resize(static_cast<size_t>(device->layout().total()));
    device->read_params(result.model.data());
    result.has_val = true;
    result.final_metrics = evaluate(*device, test, 5, 2048);
  }

  // The data calibrate() sees: no search, so a deferred final evaluation is exact.
  CalibrationData data() const { return {&train, &val, &test, nullptr}; }

  // The saved model, loaded on a fresh device and ranked as eval ranks it.
  RankingMetrics saved_metrics(const Calibration& c) const {
    SavedModel m{config, result.model, c.forest, c.forest_weight, c.linear, c.linear_weight};
    LoadedRanker r = load_ranker(m, [](const ModelConfig& mc) {
      return cpu::make_device(0, mc, DeviceOptions{1, false});
    });
    const std::vector<float> inv = run_propensities(options, train);
    return evaluate(*r.ranker, test, 5, 2048, 0, &inv);
  }
};

TEST(Calibrate, TheReportedMetricsAreTheSavedModelsAtEitherEndOfEachGrid) {
  struct Case {
    double forest;
    index_t headless;  // validation rows without the head label
    double want_tail;
  };
  // Prior weights 0 and 1: on the fixture's validation rows weight 1 gains nothing, so 0 is
  // kept (the end a kept forest once reported through the grid's last parameters); on rows
  // without the head label it gains on every row, so 1 is kept.
  for (const Case& k :
       {Case{0.5, 0, 0.0}, Case{0.5, 80, 1.0}, Case{0.0, 0, 0.0}, Case{0.0, 80, 1.0}}) {
    Fixture f;
    f.val = skewed(80, false, 2, k.headless);
    CalibrationOptions o;
    o.forest = k.forest;
    o.forest_trees = 4;
    o.linear = 0.0;
    o.tail_grid = {0.0, 1.0};
    const Calibration c =
        calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    EXPECT_EQ(c.tail_weight, k.want_tail) << k.forest;
    EXPECT_EQ(c.forest_weight, k.forest);
    EXPECT_EQ(c.forest != nullptr, k.forest > 0.0);
    const RankingMetrics saved = f.saved_metrics(c);
    for (int at : {1, 3, 5}) {
      EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(at), saved.p_at(at))
          << "forest " << k.forest << " tail " << c.tail_weight << " P@" << at;
    }
  }
}

TEST(Calibrate, AutoForestKeepsTheBestWeightOrNone) {
  Fixture f;
  CalibrationOptions o;
  o.forest_trees = 4;
  o.tail_weight = 0.0;
  o.forest_grid = {0.0};  // only "none" to choose from: nothing is kept
  Calibration c = calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
  EXPECT_EQ(c.forest, nullptr);
  EXPECT_EQ(c.forest_grid.size(), 1u);
  o.forest_grid = {1.0};
  c = calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
  ASSERT_NE(c.forest, nullptr);
  EXPECT_EQ(c.forest_weight, 1.0);
  EXPECT_EQ(c.forest_rows, f.train.rows());  // the training rows alone
  EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(1), f.saved_metrics(c).p_at(1));
}

// A final evaluation the trainer left to calibration runs there, on every test row, also when
// nothing is kept; run_pipeline() defers it only where calibration may change the model.
TEST(Calibrate, ADeferredFinalEvaluationScoresEveryTestRowOfTheSavedModel) {
  Fixture f;
  f.result.final_metrics = evaluate(*f.device, f.test, 5, 2048, 10);  // a sample's metrics
  f.result.final_eval_rows = 10;
  f.result.final_eval_deferred = true;
  CalibrationOptions o;
  o.forest = 0.0;
  o.linear = 0.0;
  o.tail_grid = {0.0, 10.0};  // keeps 0: the model is unchanged
  const Calibration c = calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
  EXPECT_EQ(c.tail_weight, 0.0);
  EXPECT_FALSE(f.result.final_eval_deferred);
  EXPECT_EQ(f.result.final_eval_rows, f.test.rows());
  EXPECT_EQ(f.result.final_metrics.rows, f.test.rows());
  const RankingMetrics saved = f.saved_metrics(c);
  for (int at : {1, 3, 5}) EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(at), saved.p_at(at));

  CalibrationOptions fixed;
  fixed.forest = 0.0;
  fixed.tail_weight = 0.0;
  fixed.linear = 0.0;
  EXPECT_FALSE(may_change_model(fixed, true));
  EXPECT_FALSE(may_change_model(CalibrationOptions{}, false));  // auto needs validation rows
  EXPECT_TRUE(may_change_model(CalibrationOptions{}, true));
  fixed.tail_weight = 0.5;
  EXPECT_TRUE(may_change_model(fixed, false));
}

// Auto keeps a forest only where its paired validation gain over none exceeds
// kGainErrors standard errors; the record says what was measured either way.
TEST(Calibrate, AForestIsKeptOnlyWhereItsGainExceedsItsNoise) {
  const auto sum = [](const GridPoint& g) {
    return g.metrics.p_at(1) + g.metrics.p_at(3) + g.metrics.p_at(5);
  };
  // A 4-tree forest at `weight` against none, no prior: the gain recorded is the grid's.
  const auto forest_against_none = [&](Fixture& f, double weight) {
    CalibrationOptions o;
    o.forest_trees = 4;
    o.tail_weight = 0.0;
    o.forest_grid = {0.0, weight};
    Calibration c = calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    EXPECT_NEAR(c.forest_gain, sum(c.forest_grid[1]) - sum(c.forest_grid[0]), 1e-9);
    return c;
  };
  {
    // A network that has not learned the topics: the forest's vote carries the ranking.
    Fixture f;
    f.device = cpu::make_device(0, f.config, DeviceOptions{1, false});
    f.device->read_params(f.result.model.data());
    f.result.final_metrics = evaluate(*f.device, f.test, 5, 2048);
    const Calibration c = forest_against_none(f, 1.0);
    ASSERT_NE(c.forest, nullptr);
    EXPECT_GT(c.forest_gain, kGainErrors * c.forest_gain_se);
  }
  {
    // The trained network with a light blend, on validation rows carrying labels no feature
    // predicts: a gain of a fraction of one row's worth, within its noise.
    Fixture f;
    f.val = skewed(80, true, 2);
    const Calibration c = forest_against_none(f, 0.5);
    ASSERT_GT(sum(c.forest_grid[1]), sum(c.forest_grid[0]));
    EXPECT_LE(c.forest_gain, kGainErrors * c.forest_gain_se);
    EXPECT_EQ(c.forest, nullptr);
    EXPECT_EQ(c.forest_weight, 0.0);
    EXPECT_NE(c.forest_skipped.find(kGainErrorsWords), std::string::npos) << c.forest_skipped;
    const RankingMetrics saved = f.saved_metrics(c);
    EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(1), saved.p_at(1));
  }
}

// Linear classifiers: auto keeps them only where their paired validation gain over none
// exceeds kGainErrors standard errors, a given weight is kept as given, and either way the
// reported metrics are the saved model's.
TEST(Calibrate, LinearClassifiersAreKeptOnlyWhereTheirGainExceedsTheirNoise) {
  {
    // A network that has not learned the topics: the classifiers carry the ranking.
    Fixture f;
    f.device = cpu::make_device(0, f.config, DeviceOptions{1, false});
    f.device->read_params(f.result.model.data());
    f.result.final_metrics = evaluate(*f.device, f.test, 5, 2048);
    CalibrationOptions o;
    o.forest = 0.0;
    o.tail_weight = 0.0;
    Calibration c = calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    ASSERT_NE(c.linear, nullptr);
    EXPECT_GT(c.linear_weight, 0.0);
    EXPECT_GT(c.linear_gain, kGainErrors * c.linear_gain_se);
    EXPECT_EQ(c.linear_grid.size(), kLinearWeightGrid.size());
    EXPECT_GT(c.linear_weights, 0);
    EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(1), f.saved_metrics(c).p_at(1));
    EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(5), f.saved_metrics(c).p_at(5));
  }
  {
    Fixture f;
    CalibrationOptions o;
    o.forest = 0.0;
    o.tail_weight = 0.0;
    o.linear_grid = {0.0};       // only "none" to choose from: the pilot stops the rest
    o.linear_pilot_above = 1.0;  // the fixture's classifiers cost less than kLinearPilotEntries
    const Calibration c =
        calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    EXPECT_EQ(c.linear, nullptr);
    EXPECT_EQ(c.linear_weight, 0.0);
    EXPECT_EQ(c.linear_weights, 0);
    EXPECT_NE(c.linear_skipped.find("a pilot of the classifiers of"), std::string::npos)
        << c.linear_skipped;
  }
  {
    Fixture f;
    CalibrationOptions o;
    o.forest = 0.0;
    o.tail_weight = 0.0;
    o.linear = 0.3;  // given: kept whatever it gains
    const Calibration c =
        calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    ASSERT_NE(c.linear, nullptr);
    EXPECT_EQ(c.linear_weight, 0.3);
    EXPECT_TRUE(c.linear_grid.empty());
    // No byte bound on a weight given: every weight the classifiers keep is in the model.
    EXPECT_EQ(c.linear->weights(), LinearExpert::train(f.train, LinearOptions{}).weights());
    EXPECT_GT(c.linear->weights(), 0);
    const RankingMetrics saved = f.saved_metrics(c);
    for (int at : {1, 3, 5}) EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(at), saved.p_at(at));
  }
  CalibrationOptions bad;
  bad.linear = 1.5;
  EXPECT_THROW(bad.validate(), InvalidArgument);
}

// Past the cost of every label on every row, auto trains each label on the rows the grown
// forest shortlists (LinearPlan::kShortlisted); without a forest, or past that cost too, it
// trains none and says why.
TEST(Calibrate, PastTheEveryRowCostEachClassifierTrainsOnTheRowsItsForestShortlists) {
  // The fixture: 45 labels x 1,200 feature entries = 54,000; shortlisted, (840 label entries
  // + 400 rows x 32 + 45 labels x 64 sampled rows) x 3 entries a row = 49,560.
  const Fixture shape;
  EXPECT_EQ(linear_plan(shape.train, 54000.0), LinearPlan::kEveryRow);
  EXPECT_EQ(linear_plan(shape.train, 50000.0), LinearPlan::kShortlisted);
  EXPECT_EQ(linear_plan(shape.train, 40000.0), LinearPlan::kNone);
  EXPECT_EQ(linear_plan(shape.train), LinearPlan::kEveryRow);  // kLinearLabelEntries
  const auto run = [](double forest, double budget, double linear = kAutoWeight,
                      std::string* expected = nullptr, bool refit = false,
                      double pilot_above = 1.0) {
    // A network that has not learned the topics.
    Fixture f;
    f.device = cpu::make_device(0, f.config, DeviceOptions{1, false});
    f.device->read_params(f.result.model.data());
    f.result.final_metrics = evaluate(*f.device, f.test, 5, 2048);
    CalibrationOptions o;
    o.forest = forest;
    o.forest_trees = 4;
    o.tail_weight = 0.0;
    o.linear = linear;
    o.linear_budget = budget;
    o.linear_pilot_above = pilot_above;
    o.refit = refit;
    const Calibration c =
        calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    if (c.linear != nullptr && !refit) {
      EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(1), f.saved_metrics(c).p_at(1));
      EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(5), f.saved_metrics(c).p_at(5));
    }
    if (expected != nullptr && c.forest != nullptr) {
      // The classifiers of the rows the kept forest shortlists, trained by hand.
      LinearShortlist shortlist;
      shortlist.k = kLinearShortlist;
      shortlist.sample_rows = kLinearSampleRows;
      c.forest->top_labels(f.train, shortlist.k, &shortlist.labels);
      LinearOptions lo;
      lo.seed = f.options.seed;
      LinearExpert::train(f.train, lo, nullptr, &shortlist).serialize(expected);
    }
    return c;
  };
  // Auto, shortlisted: trained without a pilot, the whole grid scored; the fixture's forest
  // ranks every topic already, so the classifiers gain nothing and none are kept.
  const Calibration shortlisted = run(0.5, 50000.0);
  EXPECT_EQ(shortlisted.linear_shortlist, kLinearShortlist);
  EXPECT_GT(shortlisted.linear_weights, 0);
  EXPECT_EQ(shortlisted.linear_grid.size(), kLinearWeightGrid.size());
  EXPECT_EQ(shortlisted.linear, nullptr);
  // Auto on every row: the pilot sees that gain of nothing first and stops the rest.
  const Calibration every = run(0.5, 0.0);
  EXPECT_EQ(every.linear_shortlist, 0);
  EXPECT_TRUE(every.linear_grid.empty());
  EXPECT_NE(every.linear_skipped.find("a pilot of the classifiers of"), std::string::npos)
      << every.linear_skipped;
  // ... where they cost more than the pilot's bound; within it (the fixture's 54,000 against
  // kLinearPilotEntries) every label trains at once and the whole grid is scored.
  const Calibration cheap = run(0.5, 0.0, kAutoWeight, nullptr, false, 0.0);
  EXPECT_EQ(cheap.linear_grid.size(), kLinearWeightGrid.size());
  EXPECT_GT(cheap.linear_weights, 0);
  EXPECT_EQ(cheap.linear_skipped.find("a pilot"), std::string::npos) << cheap.linear_skipped;
  // A weight given, shortlisted: the classifiers of the forest's shortlists, as given.
  std::string expected, got;
  const Calibration given = run(0.5, 50000.0, 0.5, &expected);
  ASSERT_NE(given.linear, nullptr);
  EXPECT_EQ(given.linear_weight, 0.5);
  EXPECT_EQ(given.linear_shortlist, kLinearShortlist);
  given.linear->serialize(&got);
  EXPECT_EQ(got, expected);
  // A refit trains them again, shortlisted, on the training and validation rows.
  const Calibration refit = run(0.5, 50000.0, 0.5, nullptr, true);
  ASSERT_NE(refit.linear, nullptr);
  EXPECT_TRUE(refit.refit);
  EXPECT_EQ(refit.linear_shortlist, kLinearShortlist);
  std::string again;
  refit.linear->serialize(&again);
  EXPECT_NE(again, got);
  const Calibration no_forest = run(0.0, 50000.0);
  EXPECT_EQ(no_forest.linear, nullptr);
  EXPECT_EQ(no_forest.linear_weights, 0);
  EXPECT_NE(no_forest.linear_skipped.find("no forest was grown"), std::string::npos)
      << no_forest.linear_skipped;
  const Calibration too_costly = run(0.5, 40000.0);
  EXPECT_EQ(too_costly.linear, nullptr);
  EXPECT_NE(too_costly.linear_skipped.find("even with each label on its shortlisted rows"),
            std::string::npos)
      << too_costly.linear_skipped;
  // Shortlists of 400 rows x 32 labels, about 150 KB, past a quarter of 400 KB: auto trains
  // none and says why.
  ::setenv("HETSGD_MEMORY_LIMIT", "400K", 1);
  const Calibration no_memory = run(0.5, 50000.0);
  ::unsetenv("HETSGD_MEMORY_LIMIT");
  EXPECT_EQ(no_memory.linear, nullptr);
  EXPECT_EQ(no_memory.linear_weights, 0);
  EXPECT_NE(no_memory.linear_skipped.find("more than a quarter of the memory available"),
            std::string::npos)
      << no_memory.linear_skipped;
  CalibrationOptions bad;
  bad.linear_budget = -1.0;
  EXPECT_THROW(bad.validate(), InvalidArgument);
}

// Auto keeps the prior weight of the highest validation sum, and a weight above 0 only where
// its paired gain over 0 exceeds kGainErrors standard errors, as for the forest.
TEST(Calibrate, APriorIsKeptOnlyWhereItsGainExceedsItsNoise) {
  const auto sum = [](const GridPoint& g) { return g.metrics.p135(); };
  const auto prior_against_none = [&](Fixture& f, const std::vector<double>& grid) {
    CalibrationOptions o;
    o.forest = 0.0;
    o.linear = 0.0;
    o.tail_grid = grid;
    Calibration c = calibrate(o, f.config, f.options, f.data(), *f.device, &f.result, nullptr);
    size_t best = 0;
    for (size_t i = 1; i < grid.size(); ++i)
      if (sum(c.tail_grid[i]) > sum(c.tail_grid[best])) best = i;
    EXPECT_NEAR(c.tail_gain, sum(c.tail_grid[best]) - sum(c.tail_grid[0]), 1e-9);
    return std::make_pair(c, grid[best]);
  };
  {
    // Validation rows without the head label every training row carries: pushing it down
    // gains on every row.
    Fixture f;
    f.val = skewed(80, false, 2, 80);
    const auto [c, best] = prior_against_none(f, {0.0, 0.3, 1.0});
    ASSERT_GT(best, 0.0);
    EXPECT_GT(c.tail_gain, kGainErrors * c.tail_gain_se);
    EXPECT_EQ(c.tail_weight, best);
  }
  {
    // Three validation rows of 80 without the head label: a gain on those alone, within
    // its noise; the model keeps no prior.
    Fixture f;
    f.val = skewed(80, false, 2, 3);
    const auto [c, best] = prior_against_none(f, {0.0, 0.3, 1.0});
    ASSERT_GT(best, 0.0);
    EXPECT_GT(c.tail_gain, 0.0);
    EXPECT_LE(c.tail_gain, kGainErrors * c.tail_gain_se);
    EXPECT_EQ(c.tail_weight, 0.0);
    EXPECT_DOUBLE_EQ(f.result.final_metrics.p_at(1), f.saved_metrics(c).p_at(1));
  }
}

// Auto's pilot: a third of the trees decides whether the rest is grown. Where the network
// alone ranks the validation rows as well as any blend (the trained fixture), no gain can pass
// its noise and the rest is not grown; where the forest carries the ranking (an untrained
// network), the rest grows, and the forest is the one grown without a pilot.
TEST(Calibrate, APilotGrowsTheRestOfTheForestOnlyWhereItCanPay) {
  const auto grow = [](Fixture& f, Calibration* c) {
    const int k = f.options.eval_topk;
    const std::vector<float> inv = run_propensities(f.options, f.train);
    static const CalibrationOptions o;
    f.device->write_params(f.result.model.data());
    return calibration::grow_forest(
        o, 12, 0, f.train, 1, nullptr, c,
        calibration::forest_pilot(o, *f.device, f.val, f.val.rows(), k, inv, nullptr, c));
  };
  {
    Fixture f;
    Calibration c;
    EXPECT_EQ(grow(f, &c), nullptr);
    EXPECT_NE(c.forest_skipped.find("a pilot of its first 5 of 12 trees"), std::string::npos)
        << c.forest_skipped;
    EXPECT_EQ(c.forest_trees, 0);
    EXPECT_GT(c.forest_seconds, 0.0) << "the pilot's time is reported";
  }
  {
    Fixture f;
    f.device = cpu::make_device(0, f.config, DeviceOptions{1, false});
    f.device->read_params(f.result.model.data());
    Calibration c;
    const std::shared_ptr<const LabelForest> forest = grow(f, &c);
    ASSERT_NE(forest, nullptr) << c.forest_skipped;
    EXPECT_EQ(forest->trees(), 12);
    ForestOptions plain;
    plain.trees = 12;
    plain.seed = 1;
    std::string a, b;
    forest->serialize(&a);
    LabelForest::grow(f.train, plain).serialize(&b);
    EXPECT_EQ(a, b);
  }
}

TEST(Calibrate, OptionsOutOfRangeAreRefused) {
  CalibrationOptions o;
  o.forest = 1.5;
  EXPECT_THROW(o.validate(), InvalidArgument);
  o.forest = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(o.validate(), InvalidArgument);
  o.forest = kAutoWeight;
  o.tail_grid = {0.5};  // must start at 0: the rule compares with weight 0
  EXPECT_THROW(o.validate(), InvalidArgument);
}

// Auto trees: by the label count, then within the forest's entry-tree budget, and none when
// fewer than kForestMinTrees fit.
// The head start grows the pilot's trees for the most trees the epochs allow, none where no
// forest can grow, and whatever it grew before calibrate() halts it, the forest is the same.
TEST(Calibrate, AHeadStartLeavesTheForestAsItIs) {
  CalibrationOptions o;
  o.tail_weight = 0.0;
  o.linear = 0.0;
  o.forest_grid = {1.0};
  std::string plain;
  {
    Fixture f;
    o.forest_head_start = false;
    CalibrationData d = f.data();
    EXPECT_EQ(start_forest_head(o, f.config, f.options, d), nullptr);
    const Calibration c = calibrate(o, f.config, f.options, d, *f.device, &f.result, nullptr);
    ASSERT_NE(c.forest, nullptr);
    EXPECT_EQ(c.forest_ahead, 0);
    c.forest->serialize(&plain);
  }
  o.forest_head_start = true;
  for (int round = 0; round < 2; ++round) {
    Fixture f;
    CalibrationData d = f.data();
    const std::unique_ptr<ForestHeadStart> head = start_forest_head(o, f.config, f.options, d);
    ASSERT_NE(head, nullptr);
    if (round == 1) {  // about a tree's time for the head start
      ForestOptions one;
      one.trees = 1;
      LabelForest::grow(f.train, one);
    }
    d.head_start = head.get();
    const Calibration c = calibrate(o, f.config, f.options, d, *f.device, &f.result, nullptr);
    ASSERT_NE(c.forest, nullptr);
    EXPECT_LE(c.forest_ahead, c.forest_trees);
    std::string b;
    c.forest->serialize(&b);
    EXPECT_EQ(b, plain);
    EXPECT_TRUE(head->finish().empty()) << "calibrate() took its trees";
  }
  Fixture f;
  CalibrationData none = f.data();
  none.val = nullptr;  // auto grows no forest without validation rows
  EXPECT_EQ(start_forest_head(o, f.config, f.options, none), nullptr);
  o.forest = 0.0;
  EXPECT_EQ(start_forest_head(o, f.config, f.options, f.data()), nullptr);
}

TEST(Calibrate, AutoTreesShrinkWithTheDataAndStopBelowTheMinimum) {
  EXPECT_EQ(auto_forest_trees(159, 320000), 100);    // bibtex's entries
  EXPECT_EQ(auto_forest_trees(983, 290000), 100);    // delicious'
  EXPECT_EQ(auto_forest_trees(22912, 1955000), 30);  // debian-deps'
  EXPECT_EQ(auto_forest_trees(5500, 47000), 100);    // few rows: 100 trees cost a second
  EXPECT_EQ(auto_forest_trees(5500, 100000), 100);   // kForestCheapEntryTrees exactly
  EXPECT_EQ(auto_forest_trees(5500, 100001), 30);
  EXPECT_EQ(auto_forest_trees(3993, 3400000), 17);   // eurlex-4k's shape: 100 would be 340 M
  EXPECT_EQ(auto_forest_trees(30938, 9000000), 6);   // wiki10-31k's shape
  EXPECT_EQ(auto_forest_trees(13330, 12000000), 5);  // the minimum still fits
  EXPECT_EQ(auto_forest_trees(13330, 12000001), 0);  // below it: none
  EXPECT_EQ(auto_forest_trees(13330, 86000000), 0);  // amazoncat-13k's shape
  // At most 4 trees per epoch the network trained.
  EXPECT_EQ(auto_forest_trees(581, 380000, 12.5), 50);  // debian-tags' network stops early
  EXPECT_EQ(auto_forest_trees(22912, 1955000, 8.0), 30);
  EXPECT_EQ(auto_forest_trees(983, 290000, 1.0), 0);  // 4 trees: fewer than the minimum
}

}  // namespace
}  // namespace hetsgd
