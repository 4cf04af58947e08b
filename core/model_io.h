/// \file core/model_io.h
/// The model file: a versioned, checksummed snapshot of a trained centre model.
///
/// Layout (little-endian): magic "HETSGDMD", uint32 version, uint32 loss, int64 num_features,
/// int64 num_labels, int64 hidden count, int64 hidden widths..., int64 parameter count,
/// float parameters (ParamLayout order), uint64 checksum of every preceding byte.
/// Written atomically and read through one memory mapping (core/file_io.h).
#pragma once

#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"

namespace hetsgd {

/// Current model file version; older or newer versions are refused with a clear message.
inline constexpr std::uint32_t kModelFileVersion = 1;

/// A model as stored on disk: its shape and its parameters.
struct SavedModel {
  ModelConfig config;         ///< shape and loss (optimiser settings are not stored)
  std::vector<float> params;  ///< ParamLayout(config).total() floats
};

/// Writes `model` to `path` atomically. Throws IoError on failure.
void save_model(const std::string& path, const SavedModel& model);

/// Reads and verifies a model file: magic, version, sizes against the file length, checksum.
/// Throws IoError naming the file, the field, the value found and the value expected.
SavedModel load_model(const std::string& path);

/// Throws InvalidArgument when `data` (read from `data_path`) does not fit the model from
/// `model_path`: feature or label count differs (message names both files and both values).
void check_model_fits(const ModelConfig& config, const std::string& model_path, const Dataset& data,
                      const std::string& data_path);

}  // namespace hetsgd
