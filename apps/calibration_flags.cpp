#include "apps/calibration_flags.h"

#include <cstdlib>
#include <sstream>

#include "apps/option_checks.h"
#include "apps/report.h"
#include "core/error.h"
#include "core/label_prior.h"
#include "core/model/ranker.h"

namespace hetsgd::app {
namespace {

// "auto" -> kAutoWeight, "off" (when `off` is allowed) -> 0, else a number in [0, hi]; NaN and
// trailing text are refused.
double parse_weight(const std::string& option, const std::string& text, double hi, bool off) {
  if (text == "auto") return kAutoWeight;
  std::ostringstream bound;
  bound << hi;
  if (off && text == "off") return 0.0;
  char* end = nullptr;
  const double w = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !(w >= 0.0 && w <= hi)) {
    throw InvalidArgument(option + " '" + text + "': expected auto" + (off ? ", off" : "") +
                          " or a number in [0, " + bound.str() + "]");
  }
  return w;
}

nlohmann::json grid_to_json(const std::vector<GridPoint>& grid, const char* key) {
  nlohmann::json out = nlohmann::json::array();
  for (const GridPoint& p : grid) {
    nlohmann::json row = metrics_to_json(p.metrics);
    row[key] = p.weight;
    out.push_back(row);
  }
  return out;
}

}  // namespace

CalibrationOptions CalibrationArgs::options(int threads, bool announce) const {
  CalibrationOptions o;
  o.forest = parse_weight("--forest", forest, kMaxForestWeight, true);
  o.forest_trees = forest_trees;
  o.linear = parse_weight("--linear", linear, kMaxLinearWeight, true);
  o.refit = refit;
  o.tail_weight = parse_weight("--tail-weight", tail_weight, kMaxTailWeight, false);
  o.threads = threads;
  o.announce = announce;
  o.validate();
  return o;
}

void add_calibration_options(CLI::App* cmd, CalibrationArgs* args) {
  const std::string g = "Choices on validation data";
  cmd->add_option("--forest", args->forest,
                  "blend a label forest grown on the training rows into the saved model's "
                  "ranking: softmax^(1-W) (forest + 0.003)^W, normalised; auto = the W of 0, 0.1, "
                  ".., 1 with the highest validation P@1+P@3+P@5, kept only where its gain over "
                  "none is more than one standard error (no forest without validation data, "
                  "with bce or above 100,000 labels); off; or W")
      ->capture_default_str()
      ->group(g)
      ->check(parsed_by(
          [](const std::string& t) { parse_weight("--forest", t, kMaxForestWeight, true); },
          "auto"));
  cmd->add_option("--forest-trees", args->forest_trees,
                  "trees of the label forest (0 = auto: 100 up to 4,096 labels, 30 above unless "
                  "100 x the training rows' feature and label entries is at most 1e7, at most "
                  "6e7 / those entries and, with --forest=auto, "
                  "as many as fit in 3 times the network's bytes; none below 5)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0, 1000));
  cmd->add_option("--linear", args->linear,
                  "blend one-vs-rest linear classifiers (squared hinge, C 0.5) trained on the "
                  "training rows into the saved model's ranking: [the network and forest's "
                  "blend]^(1-U) sigmoid(score)^U, normalised; auto = the U of 0, 0.1, .., 1 "
                  "with the highest validation P@1+P@3+P@5, kept only where its gain over none "
                  "is more than one standard error, after a pilot of a third of the labels "
                  "showed it can where labels x training feature entries pass 1e7; where labels x "
                  "training feature entries pass 1e9, each label "
                  "trains on its positives, the rows whose 32 labels of highest forest score "
                  "name it and 64 shared rows, with no pilot (none without validation data, "
                  "with bce, without a grown forest there, or where that too passes 1e9); off; "
                  "or U")
      ->capture_default_str()
      ->group(g)
      ->check(parsed_by(
          [](const std::string& t) { parse_weight("--linear", t, kMaxLinearWeight, true); },
          "auto"));
  cmd->add_flag("--refit", args->refit,
                "after the choices, grow the kept forest and train the kept linear classifiers "
                "again on the training AND validation rows: the saved model has then seen the "
                "rows its validation metrics were measured on (the summary and the JSON's "
                "`refit` say so)")
      ->group(g);
  cmd->add_option("--tail-weight", args->tail_weight,
                  "add W ln(1/propensity) to each label's score in the saved model: larger W "
                  "ranks tail labels higher (PSP@k) at the cost of head ones (P@k); auto = the "
                  "one of 0, 0.1, 0.2, 0.3, 0.5, 1 with the highest validation P@1+P@3+P@5, "
                  "kept only where its gain over W = 0 is more than one standard error (0 "
                  "without validation data)")
      ->capture_default_str()
      ->group(g)
      ->check(parsed_by(
          [](const std::string& t) { parse_weight("--tail-weight", t, kMaxTailWeight, false); },
          "auto"));
}

nlohmann::json calibration_to_json(const Calibration& c) {
  nlohmann::json j;
  j["forest_weight"] = c.forest_weight;
  j["tail_weight"] = c.tail_weight;
  j["refit"] = c.refit;
  if (c.forest_trees > 0) {
    j["forest_trees"] = c.forest_trees;
    j["forest_nodes"] = c.forest_nodes;
    j["forest_rows"] = c.forest_rows;
    j["forest_trees_ahead"] = c.forest_ahead;
  }
  // Also the time of a pilot that decided against the rest of the forest.
  if (c.forest_seconds > 0.0) j["forest_time_s"] = c.forest_seconds;
  if (!c.forest_grid.empty()) j["forest_grid"] = grid_to_json(c.forest_grid, "forest_weight");
  if (c.forest_gain_se > 0.0) {
    j["forest_gain"] = c.forest_gain;
    j["forest_gain_se"] = c.forest_gain_se;
  }
  if (c.tail_gain_se > 0.0) {
    j["tail_gain"] = c.tail_gain;
    j["tail_gain_se"] = c.tail_gain_se;
  }
  if (!c.tail_grid.empty()) j["tail_weight_grid"] = grid_to_json(c.tail_grid, "tail_weight");
  if (!c.forest_skipped.empty()) j["forest_skipped"] = c.forest_skipped;
  j["linear_weight"] = c.linear_weight;
  if (c.linear_weights > 0) j["linear_weights"] = c.linear_weights;
  if (c.linear_seconds > 0.0) j["linear_time_s"] = c.linear_seconds;
  if (c.linear_shortlist > 0) j["linear_shortlist"] = c.linear_shortlist;
  if (!c.linear_grid.empty()) j["linear_grid"] = grid_to_json(c.linear_grid, "linear_weight");
  if (c.linear_gain_se > 0.0) {
    j["linear_gain"] = c.linear_gain;
    j["linear_gain_se"] = c.linear_gain_se;
  }
  if (!c.linear_skipped.empty()) j["linear_skipped"] = c.linear_skipped;
  return j;
}

}  // namespace hetsgd::app
