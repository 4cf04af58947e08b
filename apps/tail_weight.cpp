#include "apps/tail_weight.h"

#include <cstdlib>

#include "apps/option_checks.h"
#include "apps/report.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/label_prior.h"
#include "core/metrics.h"
#include "core/param_layout.h"

namespace hetsgd::app {

namespace {

// A number in [0, kMaxTailWeight], or -1 for auto.
double parse_tail_weight(const std::string& text) {
  if (text == "auto") return -1.0;
  char* end = nullptr;
  const double g = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !(g >= 0.0 && g <= kMaxTailWeight)) {
    throw InvalidArgument("--tail-weight '" + text + "': expected auto or a number in [0, " +
                          std::to_string(kMaxTailWeight) + "]");
  }
  return g;
}

double p135(const RankingMetrics& m) { return m.p_at(1) + m.p_at(3) + m.p_at(5); }

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

}  // namespace

void add_tail_weight_option(CLI::App* cmd, std::string* tail_weight) {
  cmd->add_option("--tail-weight", *tail_weight,
                  "add W ln(1/propensity) to each label's score in the saved model: larger W "
                  "ranks tail labels higher (PSP@k) at the cost of head ones (P@k); auto = the "
                  "largest of 0, 0.1, 0.2, 0.3, 0.5, 1 that keeps validation P@1+P@3+P@5 at "
                  "least W = 0's (0 without validation data or with a shortlisted output layer)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& t) { parse_tail_weight(t); }, "auto"));
}

nlohmann::json apply_tail_weight(const std::string& arg, const ModelConfig& config,
                                 const TrainOptions& options, const TailWeightData& data,
                                 Device& device, TrainResult* result) {
  const double asked = parse_tail_weight(arg);
  nlohmann::json out;
  out["tail_weight"] = 0.0;
  const bool can_choose = data.val != nullptr && data.val->rows() > 0 && !config.uses_shortlist();
  if (result->model.empty() || asked == 0.0 || (asked < 0.0 && !can_choose)) return out;
  const std::vector<float> inv_prop = run_propensities(options, *data.train);
  HETSGD_CHECK(!inv_prop.empty(),
               "--tail-weight " << arg << " needs a training set of at least 2 rows");
  const std::vector<float> prior = prior_inverse_propensities(*data.train, inv_prop);
  const ParamLayout layout(config);
  const int k = options.eval_topk;
  const auto metrics_with = [&](double g, const Dataset& set, index_t rows) {
    std::vector<float> params = result->model;
    add_label_prior(layout, prior, g, &params);
    device.write(Buffer::kParams, params.data());
    return evaluate(device, set, k, options.eval_batch, rows, &inv_prop);
  };
  const bool has_val = data.val != nullptr && data.val->rows() > 0;
  const index_t val_rows = has_val ? in_training_eval_rows(options, data.val->rows(), config) : 0;
  double g = asked;
  RankingMetrics chosen_val;  // the grid's validation metrics at the chosen weight
  if (asked < 0.0) {
    // Every weight of the grid on the rows the in-training evaluations scored.
    nlohmann::json grid = nlohmann::json::array();
    double base = 0.0;
    g = 0.0;
    for (double w : kTailWeightGrid) {
      const RankingMetrics m = metrics_with(w, *data.val, val_rows);
      if (w == 0.0) base = p135(m);
      if (p135(m) >= base) {
        g = w;
        chosen_val = m;
      }
      nlohmann::json row = metrics_to_json(m);
      row["tail_weight"] = w;
      grid.push_back(row);
    }
    out["tail_weight_grid"] = grid;
  }
  out["tail_weight"] = g;
  if (g == 0.0) return out;
  if (asked < 0.0) {
    result->val_metrics = chosen_val;
  } else if (has_val) {
    result->val_metrics = metrics_with(g, *data.val, val_rows);
  }
  // The prior moves every label's score, so an index built without it does not rank them:
  // the weighted model is scored exactly on the sample the index's recall was measured on.
  if (result->final_indexed) {
    result->final_eval_rows = result->index_recall.rows;
    result->final_indexed = false;
  }
  result->final_metrics = metrics_with(g, *data.test, result->final_eval_rows);
  add_label_prior(layout, prior, g, &result->model);
  return out;
}

}  // namespace hetsgd::app
