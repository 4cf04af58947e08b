#include "apps/forest_blend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "apps/option_checks.h"
#include "apps/report.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace hetsgd::app {

namespace {

// A weight in (0, kMaxForestWeight], 0 for off, or -1 for auto.
double parse_forest(const std::string& text) {
  if (text == "auto") return -1.0;
  if (text == "off") return 0.0;
  char* end = nullptr;
  const double w = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !(w >= 0.0 && w <= kMaxForestWeight)) {
    throw InvalidArgument("--forest '" + text + "': expected auto, off or a weight in [0, 1]");
  }
  return w;
}

double p135(const RankingMetrics& m) { return m.p_at(1) + m.p_at(3) + m.p_at(5); }

}  // namespace

void add_forest_options(CLI::App* cmd, ForestArgs* args) {
  cmd->add_option("--forest", args->weight,
                  "blend a label forest grown on the training rows into the saved model's "
                  "ranking: softmax^(1-W) (forest + 0.003)^W, normalised; auto = the W of 0, 0.1, "
                  ".., 1 with the "
                  "highest validation P@1+P@3+P@5 (no forest without validation data, with bce or "
                  "above 4,096 labels); off; or W")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& t) { parse_forest(t); }, "auto"));
  cmd->add_option("--forest-trees", args->trees, "trees of the label forest")
      ->capture_default_str()
      ->check(in_range(1, 1000));
}

ForestChoice apply_forest(const ForestArgs& args, const ModelConfig& config,
                          const TrainOptions& options, const TailWeightData& data,
                          std::unique_ptr<Device>* device, TrainResult* result,
                          const std::atomic<bool>* stop) {
  const double asked = parse_forest(args.weight);
  ForestChoice out;
  out.record["forest_weight"] = 0.0;
  const bool has_val = data.val != nullptr && data.val->rows() > 0;
  const bool fits = config.loss == Loss::kSoftmax && !config.uses_shortlist();
  if (result->model.empty() || asked == 0.0 ||
      (asked < 0.0 && !(has_val && fits && config.num_labels <= kForestMaxLabels))) {
    return out;
  }
  HETSGD_CHECK(fits, "--forest " << args.weight
                                 << " blends with a softmax model's probabilities over every "
                                    "label: it needs --loss=softmax and a full output layer");
  // About one leaf label and one routing entry a row's label and feature a tree, 8 bytes each
  // (delicious: 382 MB estimated, 191 MB held): auto leaves out a forest that would take more
  // than a quarter of the memory available; a given weight must fit.
  const std::uint64_t estimate = saturating_mul(
      static_cast<std::uint64_t>(args.trees),
      saturating_mul(static_cast<std::uint64_t>(data.train->label_nnz() + data.train->nnz()), 8));
  if (asked < 0.0 && estimate > available_memory_bytes() / 4) {
    out.record["forest_skipped"] = "a forest of about " + format_bytes(estimate) +
                                   " would take more than a quarter of the memory available";
    return out;
  }
  check_memory(estimate, "--forest " + args.weight + " (" + std::to_string(args.trees) +
                             " trees over " + std::to_string(data.train->rows()) + " rows)");
  if (args.announce) {
    // Seconds without a progress line otherwise: say what runs and how to skip it.
    std::cerr << "hetsgd train: growing a label forest of " << args.trees << " trees on "
              << data.train->rows() << " rows to blend in (--forest=off skips it)\n";
  }
  ForestOptions fo;
  fo.trees = args.trees;
  fo.threads = args.threads;
  fo.seed = options.seed;
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const LabelForest> forest =
      std::make_shared<const LabelForest>(LabelForest::grow(*data.train, fo, stop));
  const double grow_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (forest->empty()) return out;  // stopped by a signal
  out.record["forest_trees"] = forest->trees();
  out.record["forest_rows"] = data.train->rows();
  out.record["forest_nodes"] = forest->nodes();
  out.record["forest_time_s"] = grow_s;
  (*device)->write(Buffer::kParams, result->model.data());
  auto blend = std::make_unique<ForestBlendDevice>(std::move(*device), forest, 0.0);
  ForestBlendDevice& b = *blend;
  *device = std::move(blend);
  const std::vector<float> inv_prop = run_propensities(options, *data.train);
  const int k = options.eval_topk;
  const index_t val_rows = has_val ? in_training_eval_rows(options, data.val->rows(), config) : 0;
  double w = asked;
  RankingMetrics chosen_val;
  if (asked < 0.0) {
    // Every weight on the same rows: the network and the forest score each block once.
    const index_t L = config.num_labels;
    const index_t block = std::max<index_t>(1, kBlendBlock / L);
    std::vector<RankingMetrics> m(kForestWeightGrid.size());
    std::vector<float> probs, fscores, scores(static_cast<size_t>(block * k));
    std::vector<col_t> labels(scores.size());
    CsrBatch sub;
    double loss = 0.0;
    for (index_t at = 0; at < val_rows && !(stop != nullptr && stop->load()); at += block) {
      const index_t end = std::min(val_rows, at + block);
      slice_rows(*data.val, at, end, &sub);
      loss += static_cast<double>(b.expert_scores(sub, &probs, &fscores)) *
              static_cast<double>(end - at);
      for (size_t g = 0; g < kForestWeightGrid.size(); ++g) {
        ForestBlendDevice::blend_topk(probs.data(), fscores.data(), end - at, L,
                                      kForestWeightGrid[g], k, labels.data(), scores.data());
        accumulate_ranking(sub, labels.data(), k, &m[g], &inv_prop);
      }
    }
    nlohmann::json grid = nlohmann::json::array();
    double best = -1.0;
    for (size_t g = 0; g < kForestWeightGrid.size(); ++g) {
      finish_ranking(&m[g]);
      m[g].loss = val_rows > 0 ? loss / static_cast<double>(val_rows) : 0.0;
      if (p135(m[g]) > best) {
        best = p135(m[g]);
        w = kForestWeightGrid[g];
        chosen_val = m[g];
      }
      nlohmann::json row = metrics_to_json(m[g]);
      row["forest_weight"] = kForestWeightGrid[g];
      grid.push_back(row);
    }
    out.record["forest_grid"] = grid;
  }
  b.set_weight(w);
  out.record["forest_weight"] = w;
  if (w == 0.0) return out;
  out.forest = forest;
  out.weight = w;
  out.options = fo;
  out.announce = args.announce;
  if (asked < 0.0) {
    result->val_metrics = chosen_val;
  } else if (has_val) {
    result->val_metrics = evaluate(b, *data.val, k, options.eval_batch, val_rows, &inv_prop, stop);
  }
  // The blend moves every label's score, so an index built on the network alone does not rank
  // it: the blend is scored exactly on the rows the index's recall was measured on.
  if (result->final_indexed) {
    result->final_eval_rows = result->index_recall.rows;
    result->final_indexed = false;
  }
  result->final_metrics =
      evaluate(b, *data.test, k, options.eval_batch, result->final_eval_rows, &inv_prop, stop);
  return out;
}

void regrow_forest(const TrainOptions& options, const TailWeightData& data, Device* device,
                   TrainResult* result, ForestChoice* choice, const std::atomic<bool>* stop) {
  auto* blend = dynamic_cast<ForestBlendDevice*>(device);
  if (choice->forest == nullptr || blend == nullptr || data.val == nullptr ||
      data.val->rows() == 0) {
    return;
  }
  // The training rows and then the validation rows, in one set.
  Dataset all = *data.train;
  append_rows(*data.val, &all);
  if (choice->announce) {
    std::cerr << "hetsgd train: growing the label forest again on the " << all.rows()
              << " training and validation rows\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto forest = std::make_shared<const LabelForest>(LabelForest::grow(all, choice->options, stop));
  if (forest->empty()) return;  // stopped by a signal: the forest of the training rows stays
  choice->record["forest_time_s"] =
      choice->record["forest_time_s"].get<double>() +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  choice->record["forest_rows"] = all.rows();
  choice->record["forest_nodes"] = forest->nodes();
  choice->forest = forest;
  blend->set_forest(forest);
  const std::vector<float> inv_prop = run_propensities(options, *data.train);
  result->final_metrics = evaluate(*blend, *data.test, options.eval_topk, options.eval_batch,
                                   result->final_eval_rows, &inv_prop, stop);
}

}  // namespace hetsgd::app
