/// \file core/engine/calibrate.h
/// The choices made after training on the run's validation rows, applied to the selected
/// model before it is saved: the weight of a label forest blended into the ranking
/// (core/model/ranker.h) and the weight of the propensity prior folded into the output biases
/// (core/label_prior.h). Each is a grid search of one kind (grid_choice()); the metrics left in
/// the TrainResult are those of the model that is saved (core/engine/README.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/evaluation.h"
#include "core/engine/forest_head_start.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/forest/label_forest.h"
#include "core/linear/linear_expert.h"
#include "core/metrics.h"
#include "core/model_config.h"

namespace hetsgd {

/// A weight chosen on validation rows.
inline constexpr double kAutoWeight = -1.0;
/// The forest weights `auto` tries (0 drops the forest).
inline const std::vector<double> kForestWeightGrid = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5,
                                                      0.6, 0.7, 0.8, 0.9, 1.0};
/// The linear classifiers' weights `auto` tries (0 drops them).
inline const std::vector<double> kLinearWeightGrid = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5,
                                                      0.6, 0.7, 0.8, 0.9, 1.0};
/// The prior weights `auto` tries.
inline const std::vector<double> kTailWeightGrid = {0.0, 0.1, 0.2, 0.3, 0.5, 1.0};
/// Most labels `auto` grows a forest for: the blend scores every label of a row (in blocks of
/// kBlendBlock scores), which at debian-deps' 22,912 labels still costs less than the forest.
inline constexpr index_t kForestMaxLabels = 100000;

struct CalibrationOptions {
  double forest = kAutoWeight;  ///< forest weight: kAutoWeight, 0 (none) or (0, 1]
  int forest_trees = 0;         ///< 0 = auto_forest_trees()
  /// After the choices, grow the kept forest again on the training and validation rows: the
  /// saved model then has seen its validation rows (the run says so).
  bool refit = false;
  double tail_weight = kAutoWeight;  ///< prior weight: kAutoWeight or [0, kMaxTailWeight]
  double linear = kAutoWeight;       ///< linear weight: kAutoWeight, 0 (none) or (0, 1]
  std::vector<double> forest_grid = kForestWeightGrid;  ///< the weights auto tries
  std::vector<double> linear_grid = kLinearWeightGrid;  ///< the weights auto tries
  std::vector<double> tail_grid = kTailWeightGrid;      ///< the weights auto tries (first: 0)
  int threads = 0;                                      ///< threads growing the forest (0 = all)
  bool announce = false;  ///< a line on stderr before each forest growth
  /// The linear classifiers' cost bound (linear_plan()); 0 = kLinearLabelEntries.
  double linear_budget = 0.0;
  /// Auto classifiers on every row costing more than this run a pilot first; 0 =
  /// kLinearPilotEntries.
  double linear_pilot_above = 0.0;
  /// run_pipeline() grows the forest's first trees while the network trains
  /// (start_forest_head()); the forest is the same without.
  bool forest_head_start = true;

  /// Throws InvalidArgument naming the option when a value is out of range (NaN included).
  void validate() const;
  /// Throws InvalidArgument when a given forest weight cannot apply to `config` (checked
  /// before the training, not after it).
  void check_fits(const ModelConfig& config) const;
};

/// Most validation rows auto's pilot (a third of the forest's trees, at least kForestMinTrees,
/// grown first) scores to decide whether the rest of the forest is grown: enough to tell a
/// gain of a few standard errors, a fraction of the grid's cost at debian-deps' 22,912 labels.
inline constexpr index_t kForestPilotRows = 1000;

/// Auto keeps the forest, the linear classifiers and a prior weight above 0 only where their
/// validation gain over none (the mean per-row difference of P@1+P@3+P@5, paired on the same
/// rows) exceeds this many of its standard errors: a stage pays its way by more than its
/// noise. One, not two: on training sets of about 1,100 rows (about 110 validation rows) two
/// dropped stages that raised held-out P@1+P@3+P@5 by 0.03 on average, and on the larger
/// sets the two give the same stages (apps/DEFAULTS.md, "The gate").
inline constexpr double kGainErrors = 1.0;
/// kGainErrors in the records' words.
inline constexpr const char* kGainErrorsWords = "one standard error";

/// Trees `--forest-trees=0` (auto) grows for `num_labels` labels: 100 up to kForestSmallLabels
/// (chosen on bibtex and delicious validation, core/forest/README.md), 30 above, where a tree
/// costs more and 30 trees already take about the network's own training time (debian-deps:
/// 50 trees gave +0.004 validation P@1+P@3+P@5 for 40% more forest time, apps/DEFAULTS.md).
inline constexpr index_t kForestSmallLabels = 4096;
/// ... and 100 above it too where 100 trees are within this many entry-trees (the training
/// rows' feature and label entries times the trees), a second or two of growth: on training
/// sets of 4,000 and 6,000 rows with 5,500 and 8,800 labels (debian-used-by's, held-out rows
/// from its training file) 100 trees raised held-out P@1+P@3+P@5 by 0.010 and 0.007 over 30
/// (apps/DEFAULTS.md, "The middle range").
inline constexpr double kForestCheapEntryTrees = 1.0e7;
/// A tree routes every training row's features and counts its labels at each level, so a
/// forest's time (and its memory estimate, grow_forest) grows with its trees times the
/// training set's feature and label entries: auto grows at most this many entry-trees, which
/// keeps it about at or below the network's own training time (debian-deps: 30 trees of
/// 1.96 million entries; wiki10-31k's shape, 8.6 million, took 52 s for 30 trees beside 30 s
/// of training), and fewer trees on more data.
inline constexpr double kForestEntryTrees = 6.0e7;
/// Auto grows no forest when its budget leaves fewer trees than this (amazoncat-13k's shape,
/// 86 million entries): a few trees vote too noisily to pay for their time, and that much
/// data trains the network well on its own.
inline constexpr int kForestMinTrees = 5;
/// Auto trees keep the forest's bytes (LabelForest::bytes()) within this many times the
/// network's parameters' bytes, so the model file stays within this plus one times the
/// network's: the first trees are grown to weigh one (ForestOptions::max_bytes), and where
/// fewer than kForestMinTrees fit, the forest is not kept. bibtex and delicious, whose
/// networks are small beside their rows, get fewer trees by it (core/forest/README.md).
inline constexpr double kForestBytesRatio = 3.0;
/// Auto grows at most this many trees per epoch the network trained. A tree costs a fifth to an
/// eighth of an epoch of the network over the same rows (debian-tags 4.1 us a row against 20,
/// debian-deps 8.5 against 66), so the forest stays within the network's own training time
/// where the network stops early: debian-tags' network stops after 12.5 epochs and gets 50
/// trees instead of 100 (validation P@1+P@3+P@5 2.0523 against 2.0519; forest 3.8 s instead
/// of 8.4 s beside 5.2 s of training).
inline constexpr double kForestTreesPerEpoch = 4.0;
/// 0 when fewer than kForestMinTrees fit kForestEntryTrees over `entries` (the training rows'
/// feature and label entries) and kForestTreesPerEpoch x `epochs` (the network's; 0 =
/// unknown, no bound).
int auto_forest_trees(index_t num_labels, std::int64_t entries, double epochs = 0.0);

/// Auto trains the linear classifiers only where their cost, the rows each label's solver
/// visits times the mean row's feature entries (it passes over them a few times), is at most
/// this: about the network's own training time on the sets it was measured on
/// (core/linear/README.md).
inline constexpr double kLinearLabelEntries = 1.0e9;
/// At most this cost (labels x the training rows' feature entries) auto trains every label
/// without a pilot: all of them take at most a tenth of a second there, while a pilot's third of a
/// few dozen labels, ranked alone on a hundred validation rows, gained nothing where all of
/// them gained 0.026 (apps/DEFAULTS.md, "The gate").
inline constexpr double kLinearPilotEntries = 1.0e7;
/// Where every label on every row passes that cost, each label trains on its positives and
/// the training rows whose forest shortlist (LabelForest::top_labels) names it among their
/// this many labels (LinearShortlist; chosen on debian-deps' validation rows).
inline constexpr int kLinearShortlist = 32;
/// ... and about this many rows drawn for every label (LinearShortlist::sample_rows): on
/// debian-deps' validation rows within the noise of none (gain 0.0214 against 0.0256, one
/// standard error 0.005), and a label whose shortlists bring it no negative row is not left
/// to call every row its own.
inline constexpr index_t kLinearSampleRows = 64;
/// Auto keeps the linear classifiers' bytes within this many times the network's parameters'
/// bytes and within what the kept forest leaves of its budget (kForestBytesRatio), dropping
/// their smallest weights first where they weigh more, so the model file stays within
/// kForestBytesRatio + 1 times the network's.
inline constexpr double kLinearBytesRatio = 1.0;
/// How auto trains linear classifiers on a training set.
enum class LinearPlan {
  kNone,         ///< too costly either way
  kEveryRow,     ///< every label on every row: labels x feature entries within the cost
  kShortlisted,  ///< each label on its forest-shortlisted rows, within the cost (a forest needed)
};
/// The plan for `train` within `budget` (0: kLinearLabelEntries; kLinearShortlist,
/// kLinearSampleRows).
LinearPlan linear_plan(const Dataset& train, double budget = 0.0);
/// What every label's classifier on every row of `train` costs: labels x feature entries (the
/// measure of kLinearLabelEntries and kLinearPilotEntries).
double linear_every_row_cost(const Dataset& train);

/// One weight of a grid and the validation metrics it gave.
struct GridPoint {
  double weight = 0.0;
  RankingMetrics metrics;
};

/// What calibrate() chose and how.
struct Calibration {
  std::shared_ptr<const LabelForest> forest;  ///< kept forest (null: none)
  double forest_weight = 0.0;
  double tail_weight = 0.0;
  std::vector<GridPoint> forest_grid;  ///< auto only
  std::vector<GridPoint> tail_grid;    ///< auto only
  int forest_trees = 0;                ///< of the grown forest (0: none grown)
  int forest_ahead = 0;                ///< of those, grown during the training (head start)
  index_t forest_nodes = 0;
  index_t forest_rows = 0;  ///< rows the kept forest grew on
  /// Growing it (and regrowing it with refit), or the pilot that decided against it.
  double forest_seconds = 0;
  bool refit = false;          ///< the kept forest grew on the validation rows too
  std::string forest_skipped;  ///< why auto kept none: memory, rows, bytes, or no gain
  std::shared_ptr<const LinearExpert> linear;  ///< kept linear classifiers (null: none)
  double linear_weight = 0.0;
  std::vector<GridPoint> linear_grid;  ///< auto only
  std::int64_t linear_weights = 0;     ///< weights of the trained classifiers (0: none trained)
  int linear_shortlist = 0;    ///< labels per row each label's rows came from (0: every row)
  double linear_seconds = 0;   ///< training them (and again with refit)
  std::string linear_skipped;  ///< why auto kept none: cost or no gain
  double linear_gain = 0.0;    ///< auto's chosen weight against none, as forest_gain
  double linear_gain_se = 0.0;
  /// Auto's chosen weight against none, on the validation rows: the mean per-row gain of
  /// P@1+P@3+P@5 and its standard error (0 when not measured).
  double forest_gain = 0.0;
  double forest_gain_se = 0.0;
  /// The same for auto's best prior weight against weight 0 (0 when not measured).
  double tail_gain = 0.0;
  double tail_gain_se = 0.0;
};

/// The sets a choice reads: training rows (label counts, the forest), validation rows (may be
/// null: no choice), test rows (reported).
struct CalibrationData {
  const Dataset* train = nullptr;
  const Dataset* val = nullptr;
  const Dataset* test = nullptr;
  /// The trainer's search (TrainCallbacks::indexed_topk): a final evaluation that ranked the
  /// test set through it is repeated through it on a model that only a prior changed.
  IndexedTopk indexed_topk;
  /// Trees grown while the network trained (start_forest_head()); calibrate() halts it first
  /// and takes its trees for the forest of `train`.
  ForestHeadStart* head_start = nullptr;
};

/// The head start of the forest calibrate() will grow on data.train (ForestHeadStart), or
/// null where it grows none for sure or `options.forest_head_start` is off. Started before
/// the training, it grows at most the trees the forest's pilot grows first when the training
/// allows the most trees (auto_forest_trees() without its bound by epochs), all of them where
/// the count is given: a pilot that stops the forest, or a count the epochs lower, leaves some
/// unused, grown on cores the training left idle.
std::unique_ptr<ForestHeadStart> start_forest_head(const CalibrationOptions& options,
                                                   const ModelConfig& config,
                                                   const TrainOptions& train_options,
                                                   const CalibrationData& data);

/// The index of the highest P@1+P@3+P@5 of `grid` (metrics on the same rows), the first of
/// ties.
size_t grid_choice(const std::vector<GridPoint>& grid);

/// True when calibrate() may change the model it is given, with or without validation rows
/// (a weight given, or one chosen on them): it then scores the test set itself, and
/// run_pipeline() leaves the trainer's exact final evaluation to it.
bool may_change_model(const CalibrationOptions& options, bool has_val);

/// Applies `options` to result->model (the selected model): the forest weight first (grown on
/// the training rows; auto with validation data, a softmax loss and at most kForestMaxLabels
/// labels picks the highest validation P@1+P@3+P@5 of kForestWeightGrid, and keeps it only
/// where its paired gain over none exceeds kGainErrors standard errors),
/// then the linear classifiers' weight on that blend (trained on the training rows, each label
/// on the rows the grown forest shortlists where linear_plan() says so; auto with validation
/// data, a softmax loss and a plan: the highest validation
/// P@1+P@3+P@5 of kLinearWeightGrid, gated the same way),
/// then the prior weight on that blend (auto: the highest validation P@1+P@3+P@5 of
/// kTailWeightGrid, kept only where its paired gain over weight 0 exceeds kGainErrors
/// standard errors). `device` evaluates
/// (its parameters are overwritten). result->val_metrics and result->final_metrics then
/// describe the model that is saved (with refit, val_metrics that before the regrowth); a
/// final evaluation the trainer deferred (TrainResult::final_eval_deferred) runs here.
/// `stop` ends a forest growth early (no forest).
Calibration calibrate(const CalibrationOptions& options, const ModelConfig& config,
                      const TrainOptions& train_options, const CalibrationData& data,
                      Device& device, TrainResult* result, const std::atomic<bool>* stop);

}  // namespace hetsgd
