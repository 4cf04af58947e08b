/// \file apps/progress_line.h
/// The progress line of `train` and `compare`: one evaluation as a line that fits the terminal
/// (no wider than $COLUMNS, 80 when unknown), with the elapsed time, an ETA against the epoch
/// or time budget, samples/s, the training loss ("-" before the first step) and P@1 named by
/// the split it is measured on.
#pragma once

#include <string>

#include "core/dataset.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/model_config.h"

namespace hetsgd::app {

/// What the line is measured against.
struct ProgressPlan {
  double epochs = 0.0;    ///< epoch limit (0 = none)
  double budget_s = 0.0;  ///< training-time budget (0 = none)
  /// What the `test` metrics are on ("train" without --test; "test[N drawn]" when each
  /// evaluation scores only N rows, drawn at random with a fixed seed).
  std::string test_split = "test";
  std::string val_split = "val";  ///< the same for the validation metrics
  std::string prefix;             ///< put first ("adaptive: " in compare)
};

/// Rows each in-training evaluation scores of the test and validation sets (the first rows of
/// each, in_training_eval_rows(), in the seeded random order the run gives them) beside the sets'
/// sizes: what `train` and `compare` label their progress lines and `train --log` its records with.
struct EvalSampleRows {
  index_t test = 0;     ///< test rows each evaluation scores
  index_t test_of = 0;  ///< rows of the test set
  index_t val = 0;      ///< validation rows each evaluation scores (0: no validation data)
  index_t val_of = 0;   ///< rows of the validation set (0: none)
  bool test_sampled() const { return test < test_of; }
  bool val_sampled() const { return val < val_of; }
};

/// The rows a run of `options` and `config` scores at each in-training evaluation of `test`
/// and of `val` (null: no validation data).
EvalSampleRows eval_sample_rows(const TrainOptions& options, const ModelConfig& config,
                                const Dataset& test, const Dataset* val);

/// The plan of a run of `options` (its resolved epoch limit and time budget) whose
/// evaluations score `rows`, its splits named "test" ("train" when `test_is_train`: no --test)
/// and "val", or "test[N drawn]" (or "train[N drawn]") and "val[N drawn]" where each evaluation
/// scores only N rows of the set.
ProgressPlan progress_plan(const TrainOptions& options, const EvalSampleRows& rows,
                           bool test_is_train);

/// Width the progress line may take: $COLUMNS, else the terminal's (stderr), else 80.
int terminal_columns();

/// `text` broken at blanks into lines of at most `width` characters (a longer word stands
/// alone on its line); each line after the first starts with `indent`.
std::string wrap_words(const std::string& text, int width, const std::string& indent = "");

/// The line for `e`, at most `width` characters: fields that do not fit are left off from the
/// end, whole.
std::string progress_line(const EvalRecord& e, const ProgressPlan& plan, int width);

}  // namespace hetsgd::app
