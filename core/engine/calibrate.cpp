#include "core/engine/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <utility>

#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/label_prior.h"
#include "core/memory_budget.h"
#include "core/param_layout.h"
#include "core/ranker.h"

namespace hetsgd {
namespace {

double p135(const RankingMetrics& m) { return m.p_at(1) + m.p_at(3) + m.p_at(5); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The prior's inverse propensities: a label the training rows never hold gets none (1/p = 1).
// The metrics' model gives it the largest 1/p of all, but its bias was only ever pushed down,
// and lifting it above labels the model has seen promotes a guess over evidence.
std::vector<float> prior_inverse_propensities(const Dataset& train, std::vector<float> inv) {
  std::vector<char> seen(inv.size(), 0);
  for (col_t l : train.y_indices) {
    if (l >= 0 && static_cast<size_t>(l) < seen.size()) seen[static_cast<size_t>(l)] = 1;
  }
  for (size_t l = 0; l < inv.size(); ++l) {
    if (!seen[l]) inv[l] = 1.0f;
  }
  return inv;
}

// A forest grown on `rows`, or null when stopped by a signal. About one leaf label and one
// routing entry per row's label and feature a tree, 8 bytes each (delicious: 382 MB estimated,
// 191 MB held): auto leaves out a forest above a quarter of the memory available (`skipped`
// says why), a given weight must fit.
std::shared_ptr<const LabelForest> grow_forest(const CalibrationOptions& o, const Dataset& rows,
                                               std::uint64_t seed, const std::atomic<bool>* stop,
                                               Calibration* c) {
  const std::uint64_t estimate =
      saturating_mul(static_cast<std::uint64_t>(o.forest_trees),
                     saturating_mul(static_cast<std::uint64_t>(rows.label_nnz() + rows.nnz()), 8));
  if (o.forest == kAutoWeight && estimate > available_memory_bytes() / 4) {
    c->forest_skipped = "a forest of about " + format_bytes(estimate) +
                        " would take more than a quarter of the memory available";
    return nullptr;
  }
  check_memory(estimate, "--forest (" + std::to_string(o.forest_trees) + " trees over " +
                             std::to_string(rows.rows()) + " rows)");
  if (o.announce) {
    // Seconds without a progress line otherwise: say what runs and how to skip it.
    std::cerr << "hetsgd: growing a label forest of " << o.forest_trees << " trees on "
              << rows.rows() << " rows (--forest=off skips it)\n";
  }
  ForestOptions fo;
  fo.trees = o.forest_trees;
  fo.threads = o.threads;
  fo.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  auto forest = std::make_shared<const LabelForest>(LabelForest::grow(rows, fo, stop));
  c->forest_seconds += seconds_since(t0);
  if (forest->empty()) return nullptr;
  c->forest_trees = forest->trees();
  c->forest_nodes = forest->nodes();
  c->forest_rows = rows.rows();
  return forest;
}

// Validation metrics of every forest weight of the grid: the network and the forest score each
// block of rows once, and every weight is blended from those scores.
std::vector<GridPoint> forest_grid(Ranker& ranker, const std::vector<double>& weights,
                                   const Dataset& val, index_t rows, int k,
                                   const std::vector<float>* inv_prop,
                                   const std::atomic<bool>* stop) {
  const index_t L = ranker.network().config().num_labels;
  const index_t block = std::max<index_t>(1, kBlendBlock / L);
  std::vector<GridPoint> grid(weights.size());
  std::vector<float> probs, fscores, scores(static_cast<size_t>(block * k));
  std::vector<col_t> labels(scores.size());
  CsrBatch sub;
  double loss = 0.0;
  for (index_t at = 0; at < rows && !(stop != nullptr && stop->load()); at += block) {
    const index_t end = std::min(rows, at + block);
    slice_rows(val, at, end, &sub);
    loss += static_cast<double>(ranker.expert_scores(sub, &probs, &fscores)) *
            static_cast<double>(end - at);
    for (size_t g = 0; g < grid.size(); ++g) {
      Ranker::blend_topk(probs.data(), fscores.data(), end - at, L, weights[g], k, labels.data(),
                         scores.data());
      accumulate_ranking(sub, labels.data(), k, &grid[g].metrics, inv_prop);
    }
  }
  for (size_t g = 0; g < grid.size(); ++g) {
    grid[g].weight = weights[g];
    finish_ranking(&grid[g].metrics);
    grid[g].metrics.loss = rows > 0 ? loss / static_cast<double>(rows) : 0.0;
  }
  return grid;
}

}  // namespace

void CalibrationOptions::validate() const {
  HETSGD_CHECK(forest == kAutoWeight || (forest >= 0.0 && forest <= kMaxForestWeight),
               "--forest " << forest << ": expected auto, off or a weight in [0, 1]");
  HETSGD_CHECK(forest_trees >= 1 && forest_trees <= 1000,
               "--forest-trees " << forest_trees << " outside [1, 1000]");
  HETSGD_CHECK(tail_weight == kAutoWeight || (tail_weight >= 0.0 && tail_weight <= kMaxTailWeight),
               "--tail-weight " << tail_weight << ": expected auto or a number in [0, "
                                << kMaxTailWeight << "]");
  HETSGD_CHECK(threads >= 0, "forest threads " << threads << " < 0");
  HETSGD_CHECK(!forest_grid.empty() && !tail_grid.empty() && tail_grid.front() == 0.0,
               "calibration grids: not empty, the prior's starting at 0");
  for (double w : forest_grid) {
    HETSGD_CHECK(w >= 0.0 && w <= kMaxForestWeight,
                 "forest grid weight " << w << " outside [0, 1]");
  }
  for (double w : tail_grid) {
    HETSGD_CHECK(w >= 0.0 && w <= kMaxTailWeight,
                 "tail grid weight " << w << " outside [0, " << kMaxTailWeight << "]");
  }
}

void CalibrationOptions::check_fits(const ModelConfig& config) const {
  HETSGD_CHECK(!(forest > 0.0) || config.loss == Loss::kSoftmax,
               "--forest " << forest
                           << " blends with a softmax model's probabilities over every label: it "
                              "needs --loss=softmax");
}

size_t grid_choice(const std::vector<GridPoint>& grid, bool highest) {
  HETSGD_CHECK(!grid.empty(), "grid_choice: an empty grid");
  size_t best = 0;
  const double base = p135(grid[0].metrics);
  for (size_t g = 1; g < grid.size(); ++g) {
    const double v = p135(grid[g].metrics);
    if (highest ? v > p135(grid[best].metrics) : v >= base) best = g;
  }
  return best;
}

Calibration calibrate(const CalibrationOptions& o, const ModelConfig& config,
                      const TrainOptions& topts, const CalibrationData& data, Device& device,
                      TrainResult* result, const std::atomic<bool>* stop) {
  o.validate();
  Calibration c;
  if (result->model.empty()) return c;
  const bool has_val = data.val != nullptr && data.val->rows() > 0;
  const index_t val_rows = has_val ? in_training_eval_rows(topts, data.val->rows(), config) : 0;
  const int k = topts.eval_topk;
  const std::vector<float> inv_prop = run_propensities(topts, *data.train);
  // A shortlisted softmax blends too: its logits are scored in full, as its evaluation does.
  const bool blends = config.loss == Loss::kSoftmax;
  if (o.forest > 0.0) o.check_fits(config);
  const bool want_forest = o.forest > 0.0 || (o.forest == kAutoWeight && has_val && blends &&
                                              config.num_labels <= kForestMaxLabels);
  device.write_params(result->model.data());

  // The forest's weight, on the network alone.
  std::shared_ptr<const LabelForest> forest;
  if (want_forest) forest = grow_forest(o, *data.train, topts.seed, stop, &c);
  double w = 0.0;
  if (forest != nullptr) {
    w = o.forest;
    if (o.forest == kAutoWeight) {
      Ranker probe(device, forest, 0.0);
      c.forest_grid = forest_grid(probe, o.forest_grid, *data.val, val_rows, k, &inv_prop, stop);
      w = c.forest_grid[grid_choice(c.forest_grid, true)].weight;
    }
  }
  if (w == 0.0) forest = nullptr;
  c.forest = forest;
  c.forest_weight = w;
  Ranker ranker = forest != nullptr ? Ranker(device, forest, w) : Ranker(device);

  // The prior's weight, on that ranking.
  double g = o.tail_weight;
  // The prior needs propensities (a training set of at least 2 rows).
  const bool tail_choice = has_val && !inv_prop.empty();
  if (g == kAutoWeight && !tail_choice) g = 0.0;
  std::vector<float> prior;
  if (g != 0.0) {
    HETSGD_CHECK(!inv_prop.empty(), "--tail-weight needs a training set of at least 2 rows");
    prior = prior_inverse_propensities(*data.train, inv_prop);
  }
  const ParamLayout layout(config);
  const auto params_with = [&](double weight) {
    std::vector<float> p = result->model;
    if (weight > 0.0) add_label_prior(layout, prior, weight, &p);
    return p;
  };
  if (g == kAutoWeight) {
    for (double weight : o.tail_grid) {
      device.write_params(params_with(weight).data());
      c.tail_grid.push_back(
          {weight, evaluate(ranker, *data.val, k, topts.eval_batch, val_rows, &inv_prop, stop)});
    }
    g = c.tail_grid[grid_choice(c.tail_grid, false)].weight;
  }
  c.tail_weight = g;
  if (forest == nullptr && g == 0.0) return c;  // the trainer's metrics are the saved model's

  // The saved model: its validation metrics are a grid's when the last choice scored it.
  if (g > 0.0) result->model = params_with(g);
  device.write_params(result->model.data());
  if (!c.tail_grid.empty()) {
    result->val_metrics = c.tail_grid[grid_choice(c.tail_grid, false)].metrics;
  } else if (!c.forest_grid.empty()) {
    result->val_metrics = c.forest_grid[grid_choice(c.forest_grid, true)].metrics;
  } else if (has_val) {
    result->val_metrics =
        evaluate(ranker, *data.val, k, topts.eval_batch, val_rows, &inv_prop, stop);
  }
  if (o.refit && forest != nullptr && has_val) {
    Dataset all = *data.train;
    append_rows(*data.val, &all);
    std::shared_ptr<const LabelForest> again = grow_forest(o, all, topts.seed, stop, &c);
    if (again != nullptr) {  // else stopped by a signal: the forest of the training rows stays
      c.forest = again;
      c.refit = true;
      ranker = Ranker(device, again, w);
    }
  }
  // The blend and the prior move every label's score, so an index built on the network alone
  // does not rank them: the model is scored exactly on the rows the index's recall was
  // measured on.
  if (result->final_indexed) {
    result->final_eval_rows = result->index_recall.rows;
    result->final_indexed = false;
  }
  result->final_metrics =
      evaluate(ranker, *data.test, k, topts.eval_batch, result->final_eval_rows, &inv_prop, stop);
  return c;
}

}  // namespace hetsgd
