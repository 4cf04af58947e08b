#include "apps/validation_args.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "apps/option_checks.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/file_io.h"
#include "datasets/load.h"
#include "datasets/validation_split.h"

namespace hetsgd::app {

void add_validation_options(CLI::App* cmd, ValArgs* a) {
  const std::string g = "Validation";
  cmd->add_option("--val", a->val_path,
                  "validation data (same formats): keep-best, --patience and --target-p1 "
                  "stopping use it; the test set only reports")
      ->group(g);
  cmd->add_option("--val-fraction", a->val_fraction,
                  "without --val: hold out this fraction of the training rows for validation "
                  "(0 = no validation: the last model is kept; not given: a tenth, at most "
                  "2,000 rows)")
      ->each([a](const std::string&) { a->fraction_given = true; })
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 0.5));
  cmd->add_option("--val-seed", a->split_seed, "seed of the validation split")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, kMaxSeed));
}

Dataset make_validation(const ValArgs& a, Dataset* train, bool* has_val, std::string* description,
                        const datasets::FormatChoice& format) {
  *has_val = false;
  if (!a.val_path.empty()) {
    // The training set's id spaces, as for --test: a LIBSVM file need not use the top label.
    Dataset val =
        datasets::load_dataset(a.val_path, {train->num_features, train->num_labels}, format);
    HETSGD_CHECK(val.rows() > 0, a.val_path << ": validation data has no rows");
    HETSGD_CHECK(val.num_labels == train->num_labels,
                 a.val_path << ": " << val.num_labels << " labels but the training data has "
                            << train->num_labels);
    HETSGD_CHECK(val.num_features <= train->num_features,
                 a.val_path << ": " << val.num_features << " features but the training data has "
                            << train->num_features);
    val.num_features = train->num_features;
    *has_val = true;
    *description += " (validation: " + a.val_path + ")";
    // A sampled evaluation scores the first rows of its set: in a seeded random order they
    // are a random draw of the file, as those of the split below are of the training rows.
    return draw_rows(val, a.split_seed);
  }
  if (a.val_fraction <= 0.0) return Dataset{};
  if (train->rows() < 2) {
    std::cerr << "hetsgd: warning: --val-fraction " << a.val_fraction << " leaves no validation "
              << "row (the training set has " << train->rows()
              << " row): no validation, the last model is kept\n";
    *description += " (no validation: one training row)";
    return Dataset{};
  }
  double fraction = a.val_fraction;
  if (!a.fraction_given) {
    fraction = std::min(
        fraction, static_cast<double>(kDefaultValMaxRows) / static_cast<double>(train->rows()));
  }
  auto [rest, val] = datasets::split_validation(*train, fraction, a.split_seed);
  *train = std::move(rest);
  *has_val = true;
  *description += " (validation: " + std::to_string(val.rows()) + " held-out training rows)";
  return std::move(val);
}

TrainingData load_training_data(DataArgs* data_args, const ValArgs& val, bool quiet,
                                TrainOptions* opts) {
  data_args->quiet = quiet;
  TrainingData data;
  static_cast<LoadedData&>(data) = load_data(*data_args);
  opts->data_name = data_args->train_path.empty() ? data_args->synthetic : data_args->train_path;
  opts->inv_propensity = run_propensities(*opts, data.train);
  data.val = make_validation(val, &data.train, &data.has_val, &data.description,
                             format_choice(*data_args, data.train_format));
  return data;
}

std::string best_model_file_for(const std::string& output, const std::string& checkpoint) {
  const std::string pid = std::to_string(static_cast<long>(::getpid()));
  // A killed run (SIGKILL, a power cut) cannot remove its scratch: the next run does, in the
  // temporary folder too when that is usable (it is not needed when the scratch goes beside
  // an output).
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (!ec) remove_stale_pid_files((tmp / "hetsgd-best.").string());
  if (!output.empty() || !checkpoint.empty()) {
    const std::string stem = !output.empty() ? output + ".best." : checkpoint + ".best.";
    remove_stale_pid_files(stem);
    return stem + pid;
  }
  const std::filesystem::path dir =
      temp_directory("keep-best's scratch copy of the best model (no -o or --checkpoint)");
  return (dir / ("hetsgd-best." + pid)).string();
}

}  // namespace hetsgd::app
