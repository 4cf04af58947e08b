/// \file core/engine/calibrate_grid.h
/// The pieces of calibrate() (core/engine/calibrate.h) that score its grids and grow its
/// forest: every (forest weight, prior weight) pair ranked from one scoring of each block of
/// validation rows, the paired gain of one pair over another, and the forest's growth with
/// auto's pilot. Internal to core/engine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/calibrate.h"
#include "core/forest/label_forest.h"
#include "core/metrics.h"
#include "core/model/ranker.h"

namespace hetsgd::calibration {

/// `v` with four decimals.
std::string format_fixed(double v);
/// Seconds since `t0`.
double seconds_since(std::chrono::steady_clock::time_point t0);

/// ForestOptions::go_on of auto's pilot: asked once the forest's first trees have grown; a no
/// leaves no forest.
using ForestPilot = std::function<bool(const LabelForest& first, int trees)>;

/// A forest of `trees` grown on `rows`, or null when stopped by a signal. About one leaf label
/// and one routing entry per row's label and feature a tree, 8 bytes each (delicious: 382 MB
/// estimated, 191 MB held): auto leaves out a forest above a quarter of the memory available
/// (c->forest_skipped says why), a given weight must fit. `pilot` (may be empty) is asked once
/// a third of the trees (at least kForestMinTrees) has grown; its no leaves no forest, its
/// reason in c->forest_skipped.
std::shared_ptr<const LabelForest> grow_forest(const CalibrationOptions& o, int trees,
                                               std::int64_t max_bytes, const Dataset& rows,
                                               std::uint64_t seed, const std::atomic<bool>* stop,
                                               Calibration* c, const ForestPilot& pilot = {},
                                               std::vector<LabelForest> ahead = {});

/// grow_forest()'s estimate of a forest's bytes: 8 for each row's label and feature a tree.
std::uint64_t forest_estimate_bytes(int trees, const Dataset& rows);

/// The options grow_forest() grows `trees` with (the head start grows with the same).
ForestOptions forest_options(const CalibrationOptions& o, int trees, std::uint64_t seed);

/// A forest weight, a prior weight and a linear weight, ranked together.
struct Pair {
  double forest = 0.0;
  double tail = 0.0;
  double linear = 0.0;
};

/// Validation metrics of each pair on the first `rows` of `val`: the network and the experts
/// score each block of rows once (Ranker::log_experts); a pair ranks label l of a row by
///   (1 - u) ((1 - w) (s_l + g prior_l) + w ln(f_l + floor)) + u ln sigmoid(z_l),
/// s the network's logit: the blend's logarithm up to the row's normaliser, which adds
/// g prior_l to the logits as add_label_prior() does to the output biases. Ranking is all the
/// metrics read, so no pair is normalised and no parameter is rewritten. `row_sums` (null: not
/// wanted) gets each pair's P@1 + P@3 + P@5 of each row, for paired_gain(). `cache` (null:
/// none) keeps every block's scores: a later call on the same rows and network reuses them,
/// scoring only the experts its ranker adds (the forest's grid, then the classifiers' and the
/// prior's, score the network once).
std::vector<RankingMetrics> pair_metrics(Ranker& ranker, const std::vector<Pair>& pairs,
                                         const std::vector<float>& prior, const Dataset& val,
                                         index_t rows, int k, const std::vector<float>* inv_prop,
                                         const std::atomic<bool>* stop,
                                         std::vector<std::vector<double>>* row_sums = nullptr,
                                         std::vector<ExpertScores>* cache = nullptr);

/// LinearOptions::go_on of auto's pilot: asked once the classifiers of a share of the labels
/// are trained; a no leaves no classifiers.
using LinearPilot =
    std::function<bool(const LinearExpert& first, const std::vector<char>& trained)>;

/// Linear classifiers trained on `rows` (LinearOptions' defaults, `seed`), their smallest
/// weights dropped to fit `max_bytes` (0: no bound), or null when stopped by a signal or by
/// `pilot`'s no (may be empty; asked once a third of the labels' classifiers are trained, its
/// reason in c->linear_skipped). With `shortlist_by`, each label trains on the rows whose
/// kLinearShortlist labels of highest forest score name it, and its own positives.
/// c->linear_weights, c->linear_seconds and c->linear_shortlist say what was trained.
std::shared_ptr<const LinearExpert> train_linear(const CalibrationOptions& o, const Dataset& rows,
                                                 std::int64_t max_bytes, std::uint64_t seed,
                                                 const std::atomic<bool>* stop, Calibration* c,
                                                 const LinearPilot& pilot = {},
                                                 const LabelForest* shortlist_by = nullptr);

/// Auto's pilot for the linear classifiers: the first labels' classifiers are blended into
/// `forest` at weight `w` (may be null) and the network on `device`, over the linear grid, on
/// at most kForestPilotRows of the first `val_rows` of `val`, ranking those labels alone
/// against each row's labels among them; the rest is trained only where the gain of the best
/// weight over none, in standard errors and projected to every label by the square root of
/// their count over the pilot's, passes kGainErrors (c->linear_skipped says why not).
LinearPilot linear_pilot(const CalibrationOptions& o, Device& device,
                         std::shared_ptr<const LabelForest> forest, double w, const Dataset& val,
                         index_t val_rows, int k, const std::atomic<bool>* stop, Calibration* c);

/// The mean of b - a over rows and its standard error.
std::pair<double, double> paired_gain(const std::vector<double>& a, const std::vector<double>& b);

/// The grid of `weights` and their metrics.
std::vector<GridPoint> grid_of(const std::vector<double>& weights,
                               const std::vector<RankingMetrics>& metrics);

/// Auto's pilot: the first trees' blend is scored on at most kForestPilotRows of the first
/// `val_rows` of `val` over the weight grid, on `device` (holding the network), and the rest
/// grows only where the gain of its best weight over none could still pass kGainErrors
/// standard errors at the forest's full size (c->forest_skipped says why not).
ForestPilot forest_pilot(const CalibrationOptions& o, Device& device, const Dataset& val,
                         index_t val_rows, int k, const std::vector<float>& inv_prop,
                         const std::atomic<bool>* stop, Calibration* c);

}  // namespace hetsgd::calibration
