/// \file apps/calibration_flags.h
/// `--forest`, `--forest-trees`, `--linear`, `--refit` and `--tail-weight`: the choices made
/// after training on the validation rows (core/engine/calibrate.h), as options of `train` and of
/// the Python package, and their report.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "core/engine/calibrate.h"

namespace hetsgd::app {

/// The options as typed: weights are "auto", "off" (forest) or a number.
struct CalibrationArgs {
  std::string forest = "auto";
  int forest_trees = 0;  ///< 0 = auto (auto_forest_trees())
  bool refit = false;
  std::string tail_weight = "auto";
  std::string linear = "auto";

  /// The library's options; `threads` grow the forest, `announce` says so on stderr.
  CalibrationOptions options(int threads, bool announce) const;
};

/// Adds the four options to `cmd`, each checked at parse time (exit 2 with the option named).
void add_calibration_options(CLI::App* cmd, CalibrationArgs* args);

/// The record's fields: `forest_weight`, `tail_weight`, `refit`; with a forest `forest_trees`,
/// `forest_nodes`, `forest_rows`, `forest_trees_ahead` (of the trees, those grown while the
/// network trained), `forest_time_s` (after the training); for auto choices `forest_grid` and
/// `tail_weight_grid` (validation metrics per weight); `forest_gain` / `forest_gain_se` and
/// `tail_gain` / `tail_gain_se` where auto weighed its best against none; `forest_skipped`
/// when auto kept no forest, and why; `linear_weight`, with trained linear classifiers
/// `linear_weights` and `linear_time_s` (`linear_shortlist`: the forest's labels a row each
/// label's rows came from, where not every row), for auto `linear_grid`, `linear_gain` /
/// `linear_gain_se`, and `linear_skipped` when auto kept none, and why.
nlohmann::json calibration_to_json(const Calibration& c);

}  // namespace hetsgd::app
