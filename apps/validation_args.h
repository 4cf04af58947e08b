/// \file apps/validation_args.h
/// `--val` / `--val-fraction`: where the validation data that every selection uses comes from.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "apps/cli_common.h"
#include "core/dataset.h"
#include "datasets/load.h"

namespace hetsgd::app {

/// Default share of the training rows held out for validation when no --val is given. A tenth
/// keeps P@1 estimates within about +-1.3 points on delicious (1,292 rows) while costing the
/// training set little.
inline constexpr double kDefaultValFraction = 0.1;
/// Most rows the default split holds out (a --val-fraction given is taken as it is). The
/// split's rows are rows the saved model never trains on; past 2,000 rows a P@1 estimate is
/// within about +-1 point already (one standard error below 0.011), and each further held-out
/// row is lost to training: on debian-deps (41,994 rows) a tenth is 4,199 (apps/DEFAULTS.md).
inline constexpr index_t kDefaultValMaxRows = 2000;

/// Validation options.
struct ValArgs {
  std::string val_path;                       ///< --val: a separate file (same formats)
  double val_fraction = kDefaultValFraction;  ///< --val-fraction: held out of --train (0 = none)
  /// --val-fraction was given: the split holds out that fraction whatever the row count;
  /// otherwise at most kDefaultValMaxRows rows.
  bool fraction_given = false;
  std::uint64_t split_seed = 11;  ///< --val-seed
};

/// Adds --val, --val-fraction and --val-seed to `cmd`.
void add_validation_options(CLI::App* cmd, ValArgs* args);

/// The validation set: --val when given (read with `train`'s id spaces, as a test file is,
/// `format` saying how, checked against `train`'s shape, and its rows in a seeded random
/// order, so that a sampled evaluation's first rows are a random draw), else a seeded split of
/// `train`
/// (which loses those rows), else none (`*has_val` false: selection off; a --val-fraction
/// that leaves no row says so on stderr). `description` gets " (validation: ...)" appended.
Dataset make_validation(const ValArgs& args, Dataset* train, bool* has_val,
                        std::string* description, const datasets::FormatChoice& format = {});

/// A training run's data: the training and test sets (the training set without the rows a
/// split held out) and the validation set.
struct TrainingData : LoadedData {
  Dataset val;           ///< empty when has_val is false
  bool has_val = false;  ///< false: no validation data (model selection off)
  /// The validation set; null when there is none.
  const Dataset* val_or_null() const { return has_val ? &val : nullptr; }
};

/// A training run's data: the sets loaded by `data_args` (quiet as `quiet`), their name and
/// inverse propensities recorded in `opts` (counted over every training row, the validation
/// rows included), then the validation set of make_validation().
TrainingData load_training_data(DataArgs* data_args, const ValArgs& val, bool quiet,
                                TrainOptions* opts);

/// Where a run keeps its best model while it trains (TrainOptions::best_model_file), so that
/// keep-best costs no model copy in memory: `<output>.best.<pid>` beside the model file, else
/// `<checkpoint>.best.<pid>`, else `hetsgd-best.<pid>` in the temporary folder ($TMPDIR or
/// /tmp). The engine removes the file when the run ends or fails, StopOnSignal
/// (apps/interrupt.h) when a second signal ends the process at once; the stale ones of
/// processes that no longer run (killed with SIGKILL) are removed here, beside the chosen
/// place and in the temporary folder.
std::string best_model_file_for(const std::string& output, const std::string& checkpoint);

}  // namespace hetsgd::app
