/// \file datasets/data_source.h
/// Where a run's data comes from: a train/test pair of files, or the embedded synthetic
/// generator. The policy every command shares lives here, not in the command line:
/// - `--train` alone: metrics are computed on the training set itself;
/// - `--train` and `--test`: the test set is read with the training set's shape as its hint
///   (a LIBSVM test file takes the training label count, so a partial or unlabeled test set
///   keeps the right width), must have the same label count and at most as many features,
///   and is widened to the training feature count;
/// - `--test` without `--train` is refused;
/// - neither: the synthetic preset (scaled), deterministic from the data seed.
#pragma once

#include <cstdint>
#include <string>

#include "core/dataset.h"
#include "datasets/load.h"

namespace hetsgd::datasets {

/// What to load.
struct DataRequest {
  std::string train_path;       ///< training file ("" = synthetic)
  std::string test_path;        ///< test file ("" = evaluate on the training set)
  std::string synthetic;        ///< preset name used when train_path is empty
  double scale = 1.0;           ///< fraction of the preset's rows, in (0, 1]
  std::uint64_t data_seed = 7;  ///< seed of the synthetic generator
  /// `--format` (forced for every text file) and whom to tell the formats read; the test
  /// file's companion is the training file's format.
  FormatChoice format;
};

/// A train/test pair and a description of where it came from (for reports).
struct DataPair {
  Dataset train;
  Dataset test;
  std::string description;     ///< the training path, or "synthetic <preset>-shaped (...)"
  bool test_is_train = false;  ///< no test file: metrics are on the training set
  std::optional<DataFormat> train_format;  ///< format of the training file (none: synthetic)
};

/// Loads or generates the pair `request` describes, by the policy above. Throws IoError for
/// unreadable or malformed files and InvalidArgument naming both files when the shapes do not
/// match, when a file has no rows, when the training set has no feature or no label, or for
/// `--test` without `--train`.
DataPair load_data_pair(const DataRequest& request);

}  // namespace hetsgd::datasets
