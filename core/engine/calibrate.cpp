#include "core/engine/calibrate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "core/engine/calibrate_grid.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/label_prior.h"
#include "core/memory_budget.h"
#include "core/model/ranker.h"
#include "core/param_layout.h"

namespace hetsgd {

// The grids and the forest (calibrate_grid.h).
using calibration::forest_pilot;
using calibration::ForestPilot;
using calibration::format_fixed;
using calibration::grid_of;
using calibration::grow_forest;
using calibration::Pair;
using calibration::pair_metrics;
using calibration::paired_gain;
using calibration::train_linear;

namespace {

// The prior's inverse propensities: a label the training rows never hold gets none (1/p = 1).
// The metrics' model gives it the largest 1/p of all, but its bias was only ever pushed down,
// and lifting it above labels the model has seen promotes a guess over evidence.
std::vector<float> prior_inverse_propensities(const Dataset& train, std::vector<float> inv) {
  std::vector<char> seen(inv.size(), 0);
  for (col_t l : train.y_indices) {
    if (l >= 0 && static_cast<size_t>(l) < seen.size()) seen[static_cast<size_t>(l)] = 1;
  }
  // A propensity model fitted to a tiny set can give 1/p below 1 (a 2-row file): no prior
  // there either.
  for (size_t l = 0; l < inv.size(); ++l) {
    if (!seen[l] || !(inv[l] >= 1.0f)) inv[l] = 1.0f;
  }
  return inv;
}

// Ranks every test row through the trainer's search (evaluate_indexed()), its recall measured
// on the first `exact_rows`; true, with the result's final evaluation filled, when it did.
// `exact_lists`: the trainer's exact lists of those rows, where the model is the one it evaluated.
bool search_test_rows(Device& device, const CalibrationData& data, index_t exact_rows,
                      std::vector<col_t>* exact_lists, int k, index_t batch,
                      const std::vector<float>& inv_prop, const std::atomic<bool>* stop,
                      TrainResult* result) {
  IndexedEval indexed;
  indexed.topk = data.indexed_topk;
  indexed.exact_rows = exact_rows;
  if (exact_lists != nullptr) {
    indexed.exact_topk = std::move(*exact_lists);
    indexed.exact = result->exact_sample;
  }
  RankingMetrics whole;
  const bool ranked =
      evaluate_indexed(device, *data.test, k, batch, &indexed, &whole, &inv_prop, stop) &&
      whole.rows == data.test->rows();
  if (indexed.level >= 0) {  // also the recall that kept the search out, for the summary
    result->index_recall = indexed.recall;
    result->index_level = indexed.level;
  }
  if (!ranked) return false;
  result->final_metrics = whole;
  result->final_eval_rows = whole.rows;
  result->final_indexed = true;
  result->final_eval_deferred = false;
  result->exact_sample = indexed.exact;
  return true;
}
}  // namespace

size_t grid_choice(const std::vector<GridPoint>& grid) {
  HETSGD_CHECK(!grid.empty(), "grid_choice: an empty grid");
  size_t best = 0;
  for (size_t g = 1; g < grid.size(); ++g)
    if (grid[g].metrics.p135() > grid[best].metrics.p135()) best = g;
  return best;
}

namespace {

// The weight of the grid's highest sum, kept only where its gain over weight 0, row by row on
// the same rows (`rows`, pair_metrics()'s), is more than kGainErrors standard errors; else 0.
// The gain and its error are recorded where they were measured (a best above 0 and a 0 in the
// grid). A best of the grid is the best of several noisy draws, so it must stand clear of the
// noise to pay for its time and bytes.
double gated_choice(const std::vector<GridPoint>& grid,
                    const std::vector<std::vector<double>>& rows, double* gain, double* se) {
  const size_t best = grid_choice(grid);
  const auto none =
      std::find_if(grid.begin(), grid.end(), [](const GridPoint& p) { return p.weight == 0.0; });
  if (grid[best].weight == 0.0 || none == grid.end()) return grid[best].weight;
  std::tie(*gain, *se) = paired_gain(rows[static_cast<size_t>(none - grid.begin())], rows[best]);
  return *gain > kGainErrors * *se ? grid[best].weight : 0.0;
}

// Whether a forest is grown at all (before its tree count is known): a weight given, or auto
// with validation rows, a softmax loss and at most kForestMaxLabels labels.
bool forest_wanted(const CalibrationOptions& o, const ModelConfig& config, bool has_val) {
  return o.forest > 0.0 || (o.forest == kAutoWeight && has_val && config.loss == Loss::kSoftmax &&
                            config.num_labels <= kForestMaxLabels);
}

// Auto trees of an auto forest keep the model file within kForestBytesRatio + 1 times the
// network's; a weight or a tree count given asks for the forest whatever it weighs (0).
std::int64_t forest_byte_budget(const CalibrationOptions& o, const ModelConfig& config) {
  if (o.forest_trees > 0 || o.forest != kAutoWeight) return 0;
  return static_cast<std::int64_t>(
      kForestBytesRatio * static_cast<double>(ParamLayout(config).total()) * sizeof(float));
}

}  // namespace

std::unique_ptr<ForestHeadStart> start_forest_head(const CalibrationOptions& o,
                                                   const ModelConfig& config,
                                                   const TrainOptions& topts,
                                                   const CalibrationData& data) {
  if (!o.forest_head_start || data.train == nullptr || data.train->rows() < 1) return nullptr;
  const bool has_val = data.val != nullptr && data.val->rows() > 0;
  // calibrate()'s conditions for a forest, with the most trees its epochs can allow.
  if (!forest_wanted(o, config, has_val)) return nullptr;
  const auto entries = static_cast<std::int64_t>(data.train->nnz() + data.train->label_nnz());
  const int auto_trees = auto_forest_trees(config.num_labels, entries);
  if (o.forest == kAutoWeight && o.forest_trees == 0 && auto_trees == 0) return nullptr;
  const int most = o.forest_trees > 0 ? o.forest_trees : std::max(auto_trees, kForestMinTrees);
  const bool pilot = o.forest == kAutoWeight && o.forest_trees == 0;
  const int limit = pilot ? std::max(kForestMinTrees, (most + 2) / 3) : most;
  // Auto leaves out a forest above a quarter of the memory available (grow_forest()).
  if (calibration::forest_estimate_bytes(limit, *data.train) > available_memory_bytes() / 4)
    return nullptr;
  ForestOptions fo = calibration::forest_options(o, most, topts.seed);
  fo.max_bytes = forest_byte_budget(o, config);  // trees past it are not kept
  return std::make_unique<ForestHeadStart>(*data.train, fo, limit);
}

Calibration calibrate(const CalibrationOptions& o, const ModelConfig& config,
                      const TrainOptions& topts, const CalibrationData& data, Device& device,
                      TrainResult* result, const std::atomic<bool>* stop) {
  o.validate();
  Calibration c;
  // The training is over: the head start stops here, its trees kept for the forest.
  std::vector<LabelForest> ahead;
  if (data.head_start != nullptr) {
    ahead = data.head_start->finish();
    if (&data.head_start->rows() != data.train) ahead.clear();  // another forest's trees
  }
  if (result->model.empty()) return c;
  const bool has_val = data.val != nullptr && data.val->rows() > 0;
  const index_t val_rows = has_val ? in_training_eval_rows(topts, data.val->rows(), config) : 0;
  const int k = topts.eval_topk;
  const std::vector<float> inv_prop = run_propensities(topts, *data.train);
  // A shortlisted softmax blends too: its logits are scored in full, as its evaluation does.
  const bool blends = config.loss == Loss::kSoftmax;
  o.check_fits(config);  // a weight given that cannot apply
  const int auto_trees = auto_forest_trees(
      config.num_labels, static_cast<std::int64_t>(data.train->nnz() + data.train->label_nnz()),
      result->epochs);
  const int trees = o.forest_trees > 0 ? o.forest_trees
                    : auto_trees > 0   ? auto_trees
                                       : kForestMinTrees;  // a weight given: grown all the same
  bool want_forest = forest_wanted(o, config, has_val);
  if (want_forest && o.forest == kAutoWeight && o.forest_trees == 0 && auto_trees == 0) {
    want_forest = false;
    c.forest_skipped = std::to_string(data.train->nnz() + data.train->label_nnz()) +
                       " feature and label entries of the training rows and the network's " +
                       format_fixed(result->epochs) + " epochs leave fewer than " +
                       std::to_string(kForestMinTrees) +
                       " trees within the forest's budget (--forest-trees grows one)";
  }
  device.write_params(result->model.data());

  // The prior's inverse propensities, when a prior may be chosen or is given.
  double g = o.tail_weight;
  // The prior needs propensities (a training set of at least 2 rows).
  const bool tail_choice = has_val && !inv_prop.empty();
  if (g == kAutoWeight && !tail_choice) g = 0.0;
  std::vector<float> inv_prior, prior;  // 1/p for add_label_prior, ln(1/p) for the grids
  if (g != 0.0) {
    HETSGD_CHECK(!inv_prop.empty(), "--tail-weight needs a training set of at least 2 rows");
    inv_prior = prior_inverse_propensities(*data.train, inv_prop);
    prior = inv_prior;
    for (float& x : prior) x = std::log(x);
  }

  // The forest's weight, on the network alone; then the prior's weight, on that blend.
  std::shared_ptr<const LabelForest> forest;
  // Auto linear classifiers get what the kept forest leaves of its budget
  // (forest_byte_budget()).
  const double network_bytes = static_cast<double>(ParamLayout(config).total()) * sizeof(float);
  const LinearPlan plan = linear_plan(*data.train, o.linear_budget);
  const bool auto_linear = o.linear == kAutoWeight && has_val && blends;
  const bool want_linear = o.linear > 0.0 || (auto_linear && plan != LinearPlan::kNone);
  if (auto_linear && plan == LinearPlan::kNone) {
    c.linear_skipped = std::to_string(config.num_labels) + " labels x " +
                       std::to_string(data.train->nnz()) +
                       " feature entries of the training rows is above the linear "
                       "classifiers' budget, even with each label on its shortlisted rows "
                       "(--linear trains them)";
  }
  const std::int64_t max_bytes = forest_byte_budget(o, config);
  // An auto forest of auto trees is grown after a pilot decides that the rest can pay.
  const ForestPilot pilot =
      o.forest == kAutoWeight && o.forest_trees == 0 && has_val
          ? forest_pilot(o, device, *data.val, val_rows, k, inv_prop, stop, &c)
          : ForestPilot{};
  if (want_forest)
    forest = grow_forest(o, trees, max_bytes, *data.train, topts.seed, stop, &c, pilot,
                         std::move(ahead));
  double w = forest != nullptr ? o.forest : 0.0;
  Ranker probe = forest != nullptr ? Ranker(device, forest, 0.0) : Ranker(device);
  // The grids' validation scores, kept from one grid to the next: each scores only the
  // experts the one before lacked (183 MB of logits for 2,000 rows of debian-deps).
  std::vector<ExpertScores> val_scores;
  if (forest != nullptr && o.forest == kAutoWeight) {
    std::vector<Pair> pairs;
    for (double x : o.forest_grid) pairs.push_back({x, 0.0});
    std::vector<std::vector<double>> rows;
    c.forest_grid = grid_of(o.forest_grid, pair_metrics(probe, pairs, prior, *data.val, val_rows, k,
                                                        &inv_prop, stop, &rows, &val_scores));
    w = gated_choice(c.forest_grid, rows, &c.forest_gain, &c.forest_gain_se);
    if (w == 0.0 && c.forest_grid[grid_choice(c.forest_grid)].weight > 0.0) {  // gated out
      c.forest_skipped = "its validation gain (P@1+P@3+P@5 " + format_fixed(c.forest_gain) +
                         ") is within " + kGainErrorsWords + " (" + format_fixed(c.forest_gain_se) +
                         ") of none";
    }
  }
  // The linear classifiers' weight, on the blend of the network and the forest as chosen.
  std::int64_t linear_bytes = 0;  // no bound: a weight given asks for them whatever they weigh
  bool train_it = want_linear;
  if (want_linear && o.linear == kAutoWeight) {
    const double kept_forest = forest != nullptr && w > 0.0 ? forest->bytes() : 0.0;
    linear_bytes = static_cast<std::int64_t>(std::min(
        kLinearBytesRatio * network_bytes, kForestBytesRatio * network_bytes - kept_forest));
    if (linear_bytes <= 0) {
      train_it = false;
      c.linear_skipped =
          "the kept forest leaves nothing of the experts' bytes (the network's "
          "parameters' bytes times " +
          std::to_string(static_cast<int>(kForestBytesRatio)) + ")";
    }
  }
  // Past the cost of every label on every row, each label trains on the rows the grown
  // forest (kept or not) shortlists; without one, auto trains none.
  const std::shared_ptr<const LabelForest> shortlist_by =
      plan != LinearPlan::kEveryRow ? forest : nullptr;
  if (train_it && o.linear == kAutoWeight && plan == LinearPlan::kShortlisted &&
      shortlist_by == nullptr) {
    train_it = false;
    c.linear_skipped =
        "training every label on every training row is above the linear "
        "classifiers' budget, and no forest was grown to shortlist each label's "
        "rows by (--linear trains them on every row)";
  }
  // Auto classifiers on every row are trained in full after a pilot decides that the rest can
  // pay, where they cost more than kLinearPilotEntries. Shortlisted, they cost a few percent of
  // the network's training, and a pilot ranking a third of the labels alone misjudged them
  // (debian-deps: +0.0005, 0.12 standard errors, where all of them gained +0.0256, 4.7;
  // core/linear/README.md).
  const double pilot_above =
      o.linear_pilot_above > 0.0 ? o.linear_pilot_above : kLinearPilotEntries;
  const calibration::LinearPilot linear_pilot =
      o.linear == kAutoWeight && has_val && shortlist_by == nullptr &&
              linear_every_row_cost(*data.train) > pilot_above
          ? calibration::linear_pilot(o, device, w > 0.0 ? forest : nullptr, w, *data.val, val_rows,
                                      k, stop, &c)
          : calibration::LinearPilot{};
  std::shared_ptr<const LinearExpert> linear =
      train_it ? train_linear(o, *data.train, linear_bytes, topts.seed, stop, &c, linear_pilot,
                              shortlist_by.get())
               : nullptr;
  double u = linear != nullptr ? o.linear : 0.0;
  if (linear != nullptr) probe = Ranker(device, forest, 0.0, linear, 0.0);
  if (linear != nullptr && o.linear == kAutoWeight) {
    std::vector<Pair> pairs;
    for (double x : o.linear_grid) pairs.push_back({w, 0.0, x});
    std::vector<std::vector<double>> rows;
    c.linear_grid = grid_of(o.linear_grid, pair_metrics(probe, pairs, prior, *data.val, val_rows, k,
                                                        &inv_prop, stop, &rows, &val_scores));
    u = gated_choice(c.linear_grid, rows, &c.linear_gain, &c.linear_gain_se);
    if (u == 0.0 && c.linear_grid[grid_choice(c.linear_grid)].weight > 0.0) {
      c.linear_skipped = "its validation gain (P@1+P@3+P@5 " + format_fixed(c.linear_gain) +
                         ") is within " + kGainErrorsWords + " (" + format_fixed(c.linear_gain_se) +
                         ") of none";
    }
  }
  if (g == kAutoWeight) {
    std::vector<Pair> pairs;
    for (double x : o.tail_grid) pairs.push_back({w, x, u});
    std::vector<std::vector<double>> rows;
    c.tail_grid = grid_of(o.tail_grid, pair_metrics(probe, pairs, prior, *data.val, val_rows, k,
                                                    &inv_prop, stop, &rows, &val_scores));
    // A prior that only keeps P@k trades P@1 for tail labels (debian-tags: weight 1 scored
    // +0.0001 of the sum and -0.0045 of P@1 on 2,000 rows): it too must pass its noise.
    g = gated_choice(c.tail_grid, rows, &c.tail_gain, &c.tail_gain_se);
  }
  val_scores = {};
  if (w == 0.0) forest = nullptr;
  if (u == 0.0) linear = nullptr;
  c.forest = forest;
  c.forest_weight = w;
  c.linear = linear;
  c.linear_weight = u;
  c.tail_weight = g;
  Ranker ranker(device, forest, w, linear, u);
  const bool changed = forest != nullptr || linear != nullptr || g != 0.0;
  // Unchanged, the trainer's metrics are the saved model's, unless it left its final
  // evaluation to this stage.
  if (!changed && !result->final_eval_deferred) return c;

  // The saved model, scored on the validation rows as eval would score it (the grids ranked
  // the same scores up to float rounding).
  if (changed) {
    if (g > 0.0) add_label_prior(ParamLayout(config), inv_prior, g, &result->model);
    device.write_params(result->model.data());
    if (has_val) {
      result->val_metrics =
          evaluate(ranker, *data.val, k, topts.eval_batch, val_rows, &inv_prop, stop);
    }
  }
  if (o.refit && (forest != nullptr || linear != nullptr) && has_val) {
    Dataset all = *data.train;
    append_rows(*data.val, &all);
    // A stop by a signal keeps the expert of the training rows.
    std::shared_ptr<const LabelForest> again =
        forest != nullptr ? grow_forest(o, c.forest_trees, 0, all, topts.seed, stop, &c) : nullptr;
    // Shortlisted classifiers take the rows' shortlists from the regrown forest, else from
    // the forest of the training rows.
    const LabelForest* by = c.linear_shortlist == 0 ? nullptr
                            : again != nullptr      ? again.get()
                                                    : shortlist_by.get();
    std::shared_ptr<const LinearExpert> linear_again =
        linear != nullptr ? train_linear(o, all, linear->bytes(), topts.seed, stop, &c, {}, by)
                          : nullptr;
    if (again != nullptr) c.forest = again;
    if (linear_again != nullptr) c.linear = linear_again;
    c.refit = again != nullptr || linear_again != nullptr;
    ranker = Ranker(device, c.forest, w, c.linear, u);
  }
  // The final evaluation as the trainer plans it (final_eval_rows()): where exact scoring of
  // every test row passes its budget, its search ranks them all. A prior alone is in the
  // network's bias, which the search ranks by; a blend moves every label's score and is
  // scored exactly on the budget's rows (or on those the search's recall was measured on).
  const bool deferred = result->final_eval_deferred;
  std::vector<col_t> sample = std::move(result->sample_topk);  // the trainer's, unchanged model
  result->sample_topk.clear();
  index_t rows =
      deferred ? final_eval_rows(topts, data.test->rows(), config, has_val ? data.val->rows() : 0)
               : result->final_eval_rows;
  const bool searched = deferred ? rows < data.test->rows() : result->final_indexed;
  if (searched && forest == nullptr && linear == nullptr && data.indexed_topk &&
      search_test_rows(device, data,
                       deferred ? result->eval_sample_rows : result->index_recall.rows,
                       changed ? nullptr : &sample, k, topts.eval_batch, inv_prop, stop, result)) {
    return c;
  }
  if (!deferred && result->final_indexed) rows = result->index_recall.rows;
  const double loss = result->final_metrics.loss;
  const RankingMetrics whole =
      evaluate(ranker, *data.test, k, topts.eval_batch, rows, &inv_prop, stop);
  // Interrupted: the sample's metrics stand, final_eval_rows saying so.
  if (whole.rows < (rows > 0 ? std::min(rows, data.test->rows()) : data.test->rows())) return c;
  result->final_metrics = whole;
  if (!std::isfinite(result->final_metrics.loss)) result->final_metrics.loss = loss;
  result->final_eval_rows = whole.rows;
  result->final_indexed = false;
  result->final_eval_deferred = false;
  return c;
}

}  // namespace hetsgd
