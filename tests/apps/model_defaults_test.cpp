// make_model_config: the automatic label smoothing applies where the output layer can take it
// (softmax, every label in one scoring block), an explicit --label-smoothing always wins, and
// the shortlisted regime keeps its defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "apps/cli_common.h"
#include "apps/train_flags.h"
#include "apps/validation_args.h"
#include "core/dataset.h"

namespace hetsgd::app {
namespace {

Dataset shape(index_t labels) {
  Dataset d;
  d.num_features = 10;
  d.num_labels = labels;
  return d;
}

TEST(ModelDefaults, AutomaticLabelSmoothingOnlyWhereTheOutputLayerTakesIt) {
  ModelArgs a;
  EXPECT_EQ(make_model_config(a, shape(983)).label_smoothing, 0.3f);
  EXPECT_EQ(make_model_config(a, shape(983)).dropout, 0.5f);
  // More labels than one scoring block (4,096 by default), a shortlist, or bce: off.
  EXPECT_EQ(make_model_config(a, shape(30938)).label_smoothing, 0.0f);
  EXPECT_EQ(make_model_config(a, shape(670091)).label_smoothing, 0.0f);
  EXPECT_EQ(make_model_config(a, shape(670091)).dropout, 0.0f);
  ModelArgs bce;
  bce.loss = Loss::kBce;
  EXPECT_EQ(make_model_config(bce, shape(983)).label_smoothing, 0.0f);
  ModelArgs shortlist;
  shortlist.output_layer = OutputLayer::kShortlist;
  EXPECT_EQ(make_model_config(shortlist, shape(983)).label_smoothing, 0.0f);
}

TEST(ModelDefaults, AnExplicitLabelSmoothingWins) {
  ModelArgs a;
  a.label_smoothing = 0.0f;
  a.label_smoothing_given = true;
  EXPECT_EQ(make_model_config(a, shape(983)).label_smoothing, 0.0f);
  a.label_smoothing = 0.1f;
  EXPECT_EQ(make_model_config(a, shape(983)).label_smoothing, 0.1f);
}

// The schedule: a shortlisted output layer trains at lr 4e-3 without warm-up and decays it with
// lambda 0.5, a full one keeps
// TrainOptions' defaults, and a value set on the command line (even the default's) wins.
TEST(ModelDefaults, ShortlistedLayersGetTheirOwnScheduleUnlessItIsGiven) {
  const ModelArgs a;
  const auto parsed = [&](std::vector<std::string> argv, index_t labels) {
    CLI::App app;
    TrainOptions o;
    ScheduleGiven given;
    add_train_options(&app, &o, &given);
    std::reverse(argv.begin(), argv.end());
    app.parse(argv);
    apply_auto_schedule(make_model_config(a, shape(labels)), given, 0, &o);
    return o;
  };
  // One schedule for every output layer, and patience that follows the validation data where
  // the run's length is the default one.
  const TrainOptions full = parsed({}, 983);
  EXPECT_EQ(full.lr0, 4e-3);
  EXPECT_EQ(full.warmup_epochs, 0.0);
  EXPECT_EQ(full.lambda, 0.5);
  EXPECT_EQ(full.patience, kAutoPatience);
  EXPECT_EQ(parsed({"--patience=3"}, 983).patience, 3);
  EXPECT_EQ(parsed({"--epochs=5"}, 983).patience, 0);
  const TrainOptions shortlisted = parsed({}, 670091);
  EXPECT_EQ(shortlisted.lr0, 4e-3);
  EXPECT_EQ(shortlisted.warmup_epochs, 0.0);
  EXPECT_EQ(shortlisted.lambda, 0.5);
  const TrainOptions given = parsed({"--lr=5e-4", "--warmup-epochs=0.5", "--lambda=0"}, 670091);
  EXPECT_EQ(given.lr0, 5e-4);
  EXPECT_EQ(given.warmup_epochs, 0.5);
  EXPECT_EQ(given.lambda, 0.0);
  const TrainOptions lr_only = parsed({"--lr=1e-3"}, 670091);
  EXPECT_EQ(lr_only.lr0, 1e-3);
  EXPECT_EQ(lr_only.warmup_epochs, 0.0);
  EXPECT_EQ(lr_only.lambda, 0.5);
}

// The default split holds out a tenth of the rows, at most 2,000; a --val-fraction given is
// taken as it is.
TEST(ModelDefaults, TheDefaultValidationSplitHoldsOutATenthAtMostTwoThousandRows) {
  const auto held_out = [](std::vector<std::string> argv, index_t rows) {
    CLI::App app;
    ValArgs v;
    add_validation_options(&app, &v);
    std::reverse(argv.begin(), argv.end());
    app.parse(argv);
    Dataset train = shape(3);
    for (index_t r = 0; r < rows; ++r) {
      train.x_indices.push_back(r % 10);
      train.x_values.push_back(1.0f);
      train.x_indptr.push_back(r + 1);
      train.y_indices.push_back(r % 3);
      train.y_indptr.push_back(r + 1);
    }
    bool has_val = false;
    std::string description;
    const Dataset val = make_validation(v, &train, &has_val, &description);
    EXPECT_TRUE(has_val);
    EXPECT_EQ(train.rows() + val.rows(), rows);
    return val.rows();
  };
  EXPECT_EQ(held_out({}, 4880), 488);
  EXPECT_EQ(held_out({}, 20000), 2000);
  EXPECT_EQ(held_out({}, 41994), 2000);
  EXPECT_EQ(held_out({"--val-fraction=0.1"}, 41994), 4199);
  EXPECT_EQ(held_out({"--val-fraction=0.02"}, 41994), 840);
}

// The middle range trains 8 epochs, fewer where the rows pass kMidRangeSamples samples.
TEST(ModelDefaults, TheMiddleRangesEpochsStopGrowingWithTheRows) {
  EXPECT_EQ(mid_range_epochs(0), 8.0);
  EXPECT_EQ(mid_range_epochs(39994), 8.0);  // debian-deps after its validation split
  EXPECT_EQ(mid_range_epochs(375000), 8.0);
  EXPECT_DOUBLE_EQ(mid_range_epochs(1184239), 3.0e6 / 1184239.0);  // amazoncat-13k's shape
  EXPECT_EQ(mid_range_epochs(100000000), 1.0);
  CLI::App app;
  TrainOptions o;
  ScheduleGiven given;
  add_train_options(&app, &o, &given);
  apply_auto_schedule(make_model_config(ModelArgs{}, shape(13330)), given, 1184239, &o);
  EXPECT_DOUBLE_EQ(o.max_epochs, 3.0e6 / 1184239.0);
}

}  // namespace
}  // namespace hetsgd::app
