/// \file apps/tail_weight.h
/// `train --tail-weight`: the propensity prior (core/label_prior.h) folded into the selected
/// model, its weight chosen on the run's validation data by default (apps/DEFAULTS.md).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/trainer.h"
#include "core/model_config.h"

namespace hetsgd::app {

/// The weights `auto` tries on the validation set.
inline const std::vector<double> kTailWeightGrid = {0.0, 0.1, 0.2, 0.3, 0.5, 1.0};

/// Adds --tail-weight (auto or a number in [0, 10]) to `cmd`.
void add_tail_weight_option(CLI::App* cmd, std::string* tail_weight);

/// The data a choice needs: the training rows (label counts), validation (may be null) and
/// test sets.
struct TailWeightData {
  const Dataset* train = nullptr;
  const Dataset* val = nullptr;
  const Dataset* test = nullptr;
};

/// Applies `arg` to `result->model` (the selected model) and, when the weight is not 0,
/// re-evaluates it on `device` (its parameters are overwritten) so that result->val_metrics
/// and result->final_metrics describe the model that is saved. `auto`: with validation data
/// and a full output layer, the largest weight of kTailWeightGrid whose validation
/// P@1 + P@3 + P@5 is at least that of weight 0; else 0. Returns the record's fields:
/// `tail_weight` and, for `auto`, `tail_weight_grid` (validation metrics per weight).
nlohmann::json apply_tail_weight(const std::string& arg, const ModelConfig& config,
                                 const TrainOptions& options, const TailWeightData& data,
                                 Device& device, TrainResult* result);

}  // namespace hetsgd::app
