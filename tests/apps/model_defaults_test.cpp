// make_model_config: the library's ModelConfig defaults are the command line's; the automatic label
// smoothing applies where the output layer can take it (softmax, every label in one scoring block),
// an explicit --label-smoothing always wins, and the shortlisted regime keeps its defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "apps/cli_common.h"
#include "apps/train_flags.h"
#include "apps/validation_args.h"
#include "core/dataset.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "kernels/registry.h"
#include "kernels/replicas.h"

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

// The schedule: every output layer trains at lr 4e-3 without warm-up and decays it with
// lambda 0.5; the run's length and patience are auto, resolved from the output layer and the
// validation data where no length is set, the library's defaults and the command line's alike;
// a value set on the command line wins.
TEST(ModelDefaults, EveryLayerGetsTheLibrarysScheduleAndPatienceFollowsTheRunLength) {
  EXPECT_EQ(TrainOptions{}.lr0, 4e-3);
  EXPECT_EQ(TrainOptions{}.warmup_epochs, 0.0);
  EXPECT_EQ(TrainOptions{}.lambda, 0.5);
  EXPECT_EQ(TrainOptions{}.max_epochs, kAutoEpochs);
  EXPECT_EQ(TrainOptions{}.patience, kAutoPatience);
  const ModelArgs a;
  // Parsed as `train` parses them, then resolved for 40,000 training rows as the trainer
  // resolves them.
  const auto parsed = [&](std::vector<std::string> argv, index_t labels, bool has_val = true) {
    CLI::App app;
    TrainOptions o;
    add_train_options(&app, &o);
    std::reverse(argv.begin(), argv.end());
    app.parse(argv);
    resolve_schedule(make_model_config(a, shape(labels)), {40000, 1000, has_val ? 1000 : 0}, &o);
    return o;
  };
  // One schedule for every output layer; patience that follows the validation data where the
  // run's length is the default one, and the sample floor beside it.
  const TrainOptions full = parsed({}, 983);
  EXPECT_EQ(full.lr0, 4e-3);
  EXPECT_EQ(full.warmup_epochs, 0.0);
  EXPECT_EQ(full.lambda, 0.5);
  EXPECT_EQ(full.patience, kAutoPatienceEvaluations);
  EXPECT_EQ(full.max_epochs, 25.0);
  EXPECT_EQ(parsed({}, 983, false).patience, 0);
  EXPECT_EQ(parsed({"--epochs=auto", "--patience=auto"}, 983).patience, kAutoPatienceEvaluations);
  EXPECT_EQ(parsed({"--patience=3"}, 983).patience, 3);
  EXPECT_EQ(parsed({"--epochs=5"}, 983).patience, 0);
  EXPECT_EQ(parsed({"--epochs=5"}, 983).max_epochs, 5.0);
  EXPECT_EQ(parsed({"--time-budget=60"}, 983).patience, 0);
  EXPECT_EQ(parsed({"--time-budget=60"}, 983).max_epochs, 25.0);
  const TrainOptions shortlisted = parsed({}, 670091);
  EXPECT_EQ(shortlisted.lr0, 4e-3);
  EXPECT_EQ(shortlisted.warmup_epochs, 0.0);
  EXPECT_EQ(shortlisted.lambda, 0.5);
  EXPECT_EQ(shortlisted.max_epochs, 25.0);  // above the middle range
  // The middle range's 8 epochs, raised to the sample floor only where patience is auto.
  EXPECT_EQ(parsed({}, 22912).max_epochs, 8.0);
  EXPECT_EQ(parsed({"--patience=8"}, 22912).max_epochs, 8.0);
  const TrainOptions given = parsed({"--lr=5e-4", "--warmup-epochs=0.5", "--lambda=0"}, 670091);
  EXPECT_EQ(given.lr0, 5e-4);
  EXPECT_EQ(given.warmup_epochs, 0.5);
  EXPECT_EQ(given.lambda, 0.0);
  const TrainOptions lr_only = parsed({"--lr=1e-3"}, 670091);
  EXPECT_EQ(lr_only.lr0, 1e-3);
  EXPECT_EQ(lr_only.warmup_epochs, 0.0);
  EXPECT_EQ(lr_only.lambda, 0.5);
  // A library caller that sets nothing gets the same resolution.
  TrainOptions library;
  resolve_schedule(make_model_config(a, shape(983)), {4000, 1000, 1000}, &library);
  EXPECT_EQ(library.patience, kAutoPatienceEvaluations);
  EXPECT_DOUBLE_EQ(library.max_epochs, kAutoMinSamples / 4000.0);
  // Where in-training evaluations score a sample of their sets (wiki10-31k's shape: 30,938
  // labels, 6,616 test rows), their cost paces them too seldom for patience: no floor.
  const ModelConfig wiki = make_model_config(a, shape(30938));
  TrainOptions sampled;
  resolve_schedule(wiki, {12731, 6616, 1415}, &sampled);
  ASSERT_LT(in_training_eval_rows(sampled, 6616, wiki), 6616);
  EXPECT_EQ(sampled.patience, kAutoPatienceEvaluations);
  EXPECT_EQ(sampled.max_epochs, 8.0);
  TrainOptions whole;
  resolve_schedule(wiki, {12731, 1000, 1000}, &whole);
  EXPECT_DOUBLE_EQ(whole.max_epochs, kAutoMinSamples / 12731.0);
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
  TrainOptions o;
  resolve_schedule(make_model_config(ModelArgs{}, shape(13330)), {1184239, 1000, 1000}, &o);
  EXPECT_DOUBLE_EQ(o.max_epochs, 3.0e6 / 1184239.0);
}

// Where labels are rare the 8 are passes of the decay's clock, longer than epochs, still
// within kMidRangeSamples samples; a pass is never shorter than an epoch.
TEST(ModelDefaults, TheMiddleRangeCountsPassesWhereLabelsAreRare) {
  EXPECT_DOUBLE_EQ(mid_range_epochs(28403, 1.75), 14.0);
  EXPECT_EQ(mid_range_epochs(39994, 0.5), 8.0);
  EXPECT_EQ(mid_range_epochs(0, 2.0), 16.0);
  EXPECT_DOUBLE_EQ(mid_range_epochs(300000, 2.0), 10.0);  // 3 million samples
  TrainOptions o;
  // A sampled test set: no sample floor, so the passes alone set the cap.
  resolve_schedule(make_model_config(ModelArgs{}, shape(43849)), {28403, 10187, 2000, 1.75}, &o);
  EXPECT_DOUBLE_EQ(o.max_epochs, 14.0);
  TrainOptions full;  // a full softmax is not the middle range's: 25 epochs, any pass
  resolve_schedule(make_model_config(ModelArgs{}, shape(983)), {12000, 3000, 1000, 1.75}, &full);
  EXPECT_EQ(full.max_epochs, kDefaultEpochs);
}

// One set of defaults: a ModelConfig left at its defaults, resolved by resolve_model() as
// make_replicas() resolves it, is the model `hetsgd train` builds with no model option, field
// by field, on both sides of every automatic range's bounds.
TEST(ModelDefaults, TheLibrarysDefaultsAreTheCommandLines) {
  const double memory = static_cast<double>(available_memory_bytes());
  for (index_t labels : {983, 4096, 4097, 30938, 100000}) {
    const ModelConfig cli = make_model_config(ModelArgs{}, shape(labels));
    ModelConfig requested;
    requested.num_features = 10;
    requested.num_labels = labels;
    EXPECT_FALSE(requested.resolved());
    const ModelConfig lib = resolve_model(requested, memory);
    ASSERT_TRUE(lib.resolved());
    EXPECT_EQ(lib.hidden, cli.hidden) << labels;
    EXPECT_EQ(lib.dropout, cli.dropout) << labels;
    EXPECT_EQ(lib.input_dropout, cli.input_dropout) << labels;
    EXPECT_EQ(lib.label_smoothing, cli.label_smoothing) << labels;
    EXPECT_EQ(lib.output_layer, cli.output_layer) << labels;
    EXPECT_EQ(lib.uses_shortlist(), cli.uses_shortlist()) << labels;
    EXPECT_EQ(lib.loss, cli.loss);
    EXPECT_EQ(lib.seed, cli.seed);
    EXPECT_EQ(lib.optimizer.kind, cli.optimizer.kind);
    EXPECT_EQ(lib.optimizer.momentum, cli.optimizer.momentum);
    EXPECT_EQ(lib.optimizer.weight_decay, cli.optimizer.weight_decay);
    const ShortlistConfig &l = lib.shortlist, &c = cli.shortlist;
    EXPECT_EQ(l.wait_for_index, c.wait_for_index);
    EXPECT_EQ(l.index_duty, c.index_duty);
    EXPECT_EQ(l.score_chunk, c.score_chunk);
    EXPECT_EQ(l.auto_labels, c.auto_labels);
    EXPECT_EQ(l.hard_negatives, c.hard_negatives);
    EXPECT_EQ(l.sampled_negatives, c.sampled_negatives);
    EXPECT_EQ(l.max_positives, c.max_positives);
    EXPECT_EQ(l.rebuild_steps, c.rebuild_steps);
    EXPECT_EQ(l.ann_m, c.ann_m);
    EXPECT_EQ(l.ann_ef_construction, c.ann_ef_construction);
    EXPECT_EQ(l.ann_ef_search, c.ann_ef_search);
    EXPECT_EQ(l.optimizer, c.optimizer);
    EXPECT_EQ(l.lr_scale, c.lr_scale);
  }
  // The command line's --index-wait is off by default, as the library's.
  EXPECT_FALSE(ModelConfig{}.shortlist.wait_for_index);
  EXPECT_TRUE(
      make_model_config(ModelArgs{}, shape(983), /*deterministic=*/true).shortlist.wait_for_index);
}

// Explicit values mean what they say: resolve_model() fills only what is automatic (0 is an
// explicit "off", not "unset").
TEST(ModelDefaults, ResolveModelKeepsExplicitValues) {
  ModelConfig c;
  c.num_features = 10;
  c.num_labels = 983;
  c.hidden = {64, 32};
  c.dropout = 0.0f;
  c.label_smoothing = 0.0f;
  c.output_layer = OutputLayer::kShortlist;
  const ModelConfig r = resolve_model(c, 0.0);
  EXPECT_EQ(r.hidden, (std::vector<index_t>{64, 32}));
  EXPECT_EQ(r.dropout, 0.0f);
  EXPECT_EQ(r.label_smoothing, 0.0f);
  EXPECT_EQ(r.output_layer, OutputLayer::kShortlist);
  // One field left automatic is filled, the others kept.
  c.dropout = kAutoRate;
  EXPECT_EQ(resolve_model(c, 0.0).dropout, 0.5f);
  EXPECT_EQ(resolve_model(c, 0.0).hidden, (std::vector<index_t>{64, 32}));
}

// A device is never built from an automatic field: validate() names resolve_model(), and
// make_replicas() resolves a default config itself, to the command line's model.
TEST(ModelDefaults, ReplicasOfADefaultConfigGetTheCommandLinesModel) {
  ModelConfig requested;
  requested.num_features = 10;
  requested.num_labels = 983;
  try {
    requested.validate();
    ADD_FAILURE() << "an automatic config validated";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("resolve_model()"), std::string::npos) << e.what();
  }
  const auto replicas = make_replicas(resolve_devices("cpu:0"), requested, DeviceOptions{});
  ASSERT_EQ(replicas.size(), 1u);
  const ModelConfig cli = make_model_config(ModelArgs{}, shape(983));
  EXPECT_EQ(replicas[0]->config().hidden, cli.hidden);
  EXPECT_EQ(replicas[0]->config().dropout, cli.dropout);
  EXPECT_EQ(replicas[0]->config().label_smoothing, cli.label_smoothing);
}

}  // namespace
}  // namespace hetsgd::app
