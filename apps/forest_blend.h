/// \file apps/forest_blend.h
/// `train --forest`: a label forest (core/forest/) grown on the training rows after the network
/// and blended into the saved model's ranking, its weight chosen on the run's validation data
/// by default (apps/DEFAULTS.md).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "apps/tail_weight.h"
#include "core/forest/blend_device.h"

namespace hetsgd::app {

/// The weights `auto` tries on the validation set.
inline const std::vector<double> kForestWeightGrid = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5,
                                                      0.6, 0.7, 0.8, 0.9, 1.0};
/// Most labels `auto` grows a forest for: the blend scores every label of a row (as label
/// smoothing's block does, ShortlistConfig::score_chunk).
inline constexpr index_t kForestMaxLabels = 4096;

struct ForestArgs {
  std::string weight = "auto";        ///< --forest: auto, off, or a weight in (0, 1]
  int trees = ForestOptions{}.trees;  ///< --forest-trees
  int threads = 0;                    ///< the run's --threads (0 = all)
  bool announce = false;              ///< a line on stderr before each growth (not -q)
};

/// Adds --forest and --forest-trees to `cmd`.
void add_forest_options(CLI::App* cmd, ForestArgs* args);

/// What apply_forest() leaves: the forest and its weight (null / 0: none), and the record's
/// fields (`forest_weight`, `forest_trees`, `forest_nodes`, `forest_time_s` and, for auto,
/// `forest_grid`: validation metrics per weight).
struct ForestChoice {
  std::shared_ptr<const LabelForest> forest;
  double weight = 0.0;
  ForestOptions options;  ///< how it was grown
  bool announce = false;  ///< ForestArgs::announce, for the regrowth
  nlohmann::json record;
};

/// Grows the forest on `data.train` and blends it into `*device` (replaced by a
/// ForestBlendDevice around it, loaded with result->model) when `args` asks for it: auto with
/// validation data, a softmax loss and a full output layer of at most kForestMaxLabels labels
/// picks the weight of kForestWeightGrid with the highest validation P@1 + P@3 + P@5 (the
/// smallest of ties; 0 drops the forest), a number uses that weight. result->val_metrics and
/// result->final_metrics then describe the blend. `stop` ends the growth early (no forest).
ForestChoice apply_forest(const ForestArgs& args, const ModelConfig& config,
                          const TrainOptions& options, const TailWeightData& data,
                          std::unique_ptr<Device>* device, TrainResult* result,
                          const std::atomic<bool>* stop);

/// After the weights are chosen (the forest's and then the tail weight's, on validation rows
/// the forest did not see): grows the kept forest again, with the same options, on the
/// training and the validation rows together, puts it into `device` (the ForestBlendDevice
/// apply_forest() made) and scores the test set again (result->final_metrics; the validation
/// metrics stay those of the choice). Nothing without a kept forest or validation rows.
void regrow_forest(const TrainOptions& options, const TailWeightData& data, Device* device,
                   TrainResult* result, ForestChoice* choice, const std::atomic<bool>* stop);

}  // namespace hetsgd::app
