#include "core/engine/calibrate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/label_prior.h"

// The calibration's options and the rules that size it, apart from the stage itself
// (calibrate.cpp).
namespace hetsgd {

void CalibrationOptions::validate() const {
  HETSGD_CHECK(forest == kAutoWeight || (forest >= 0.0 && forest <= kMaxForestWeight),
               "--forest " << forest << ": expected auto, off or a weight in [0, 1]");
  HETSGD_CHECK(forest_trees >= 0 && forest_trees <= 1000,
               "--forest-trees " << forest_trees << " outside [0, 1000]");
  HETSGD_CHECK(tail_weight == kAutoWeight || (tail_weight >= 0.0 && tail_weight <= kMaxTailWeight),
               "--tail-weight " << tail_weight << ": expected auto or a number in [0, "
                                << kMaxTailWeight << "]");
  HETSGD_CHECK(linear == kAutoWeight || (linear >= 0.0 && linear <= kMaxLinearWeight),
               "--linear " << linear << ": expected auto, off or a weight in [0, 1]");
  HETSGD_CHECK(threads >= 0, "forest threads " << threads << " < 0");
  HETSGD_CHECK(linear_budget >= 0.0 && std::isfinite(linear_budget),
               "linear_budget " << linear_budget << " must be >= 0");
  HETSGD_CHECK(linear_pilot_above >= 0.0 && std::isfinite(linear_pilot_above),
               "linear_pilot_above " << linear_pilot_above << " must be >= 0");
  HETSGD_CHECK(!forest_grid.empty() && !tail_grid.empty() && !linear_grid.empty() &&
                   tail_grid.front() == 0.0,
               "calibration grids: not empty, the prior's starting at 0");
  for (double w : linear_grid) {
    HETSGD_CHECK(w >= 0.0 && w <= kMaxLinearWeight,
                 "linear grid weight " << w << " outside [0, 1]");
  }
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
  HETSGD_CHECK(!(linear > 0.0) || config.loss == Loss::kSoftmax,
               "--linear " << linear
                           << " blends with a softmax model's probabilities over every label: it "
                              "needs --loss=softmax");
}

double linear_every_row_cost(const Dataset& train) {
  return static_cast<double>(train.num_labels) * static_cast<double>(train.nnz());
}

LinearPlan linear_plan(const Dataset& train, double budget) {
  if (budget == 0.0) budget = kLinearLabelEntries;
  const auto n = static_cast<double>(train.rows());
  const auto L = static_cast<double>(train.num_labels);
  const auto entries = static_cast<double>(train.nnz());
  if (linear_every_row_cost(train) <= budget) return LinearPlan::kEveryRow;
  // Each label's positives, the rows naming it (at most the label entries and k a row) and
  // the rows every label sees.
  const double visits = static_cast<double>(train.label_nnz()) + n * kLinearShortlist +
                        L * std::min(n, static_cast<double>(kLinearSampleRows));
  return n > 0.0 && visits * entries / n <= budget ? LinearPlan::kShortlisted : LinearPlan::kNone;
}

bool may_change_model(const CalibrationOptions& o, bool has_val) {
  return o.forest > 0.0 || o.tail_weight > 0.0 || o.linear > 0.0 ||
         (has_val &&
          (o.forest == kAutoWeight || o.tail_weight == kAutoWeight || o.linear == kAutoWeight));
}

int auto_forest_trees(index_t num_labels, std::int64_t entries, double epochs) {
  const bool cheap = 100.0 * static_cast<double>(entries) <= kForestCheapEntryTrees;
  const int by_labels = num_labels <= kForestSmallLabels || cheap ? 100 : 30;
  double by_cost = kForestEntryTrees / static_cast<double>(std::max<std::int64_t>(entries, 1));
  if (epochs > 0.0) by_cost = std::min(by_cost, kForestTreesPerEpoch * epochs);
  const int trees = by_cost >= by_labels ? by_labels : static_cast<int>(by_cost);
  return trees >= kForestMinTrees ? trees : 0;
}

}  // namespace hetsgd
