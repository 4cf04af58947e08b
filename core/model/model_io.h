/// \file core/model/model_io.h
/// The model file: a versioned, checksummed snapshot of a trained centre model.
///
/// Layout (little-endian): magic "HETSGDMD", uint32 version, uint32 loss, int64 num_features,
/// int64 num_labels, int64 hidden count, int64 hidden widths..., int64 parameter count,
/// float parameters (ParamLayout order), uint64 checksum of every preceding byte.
/// Written atomically and read through one memory mapping (core/file_io.h).
///
/// Version 3 appends a forest trailer after the parameters: double forest weight, uint64 length
/// and the label forest's bytes (core/forest/label_forest.h; length 0 and weight 0: none).
/// Version 4 appends a linear trailer after the forest's: double linear weight, uint64 length
/// and the linear classifiers' bytes (core/linear/linear_expert.h; 0 and 0: none).
/// Version 2 (no trailer) stores the output layer's weights by label ([L x hidden], as
/// ParamLayout does); version 1 stored them [hidden x L]; both are still read.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dataset.h"
#include "core/forest/label_forest.h"
#include "core/linear/linear_expert.h"
#include "core/model_config.h"

namespace hetsgd {

/// Current model file version; version 1 is read too, other versions are refused with a clear
/// message.
inline constexpr std::uint32_t kModelFileVersion = 4;

/// A model as stored on disk: its shape and its parameters.
struct SavedModel {
  /// Shape and loss (optimiser settings are not stored). What the file does not store is no
  /// choice left open: a saved network scores every label and trains no more, so it has no
  /// automatic output layer, dropout or label smoothing.
  ModelConfig config = [] {
    ModelConfig c;
    c.output_layer = OutputLayer::kFull;
    c.dropout = 0.0f;
    c.label_smoothing = 0.0f;
    return c;
  }();
  std::vector<float> params;  ///< ParamLayout(config).total() floats
  /// The label forest blended into the ranking (core/forest/), or null; stored only with a
  /// weight above 0.
  std::shared_ptr<const LabelForest> forest;
  double forest_weight =
      0.0;  ///< its weight W in the product p^(1-W) (f + floor)^W (core/model/ranker.h)
  /// The one-vs-rest linear classifiers blended into the ranking (core/linear/), or null;
  /// stored only with a weight above 0.
  std::shared_ptr<const LinearExpert> linear;
  double linear_weight = 0.0;  ///< its weight u in the blend (core/model/ranker.h)
};

/// Writes `model` to `path` atomically. Throws IoError on failure and when a parameter is
/// NaN or infinite (such a model could not be loaded back).
void save_model(const std::string& path, const SavedModel& model);

/// Reads and verifies a model file (a regular file): magic, version, every shape field
/// range-checked (num_features and num_labels in [1, 2^31], 1 to 64 hidden layers of width
/// [1, 2^20]) before any size is computed from it, the parameter count against the shape and
/// the file length, the checksum, and every parameter finite (a NaN/Inf model is refused).
/// Throws IoError naming the file, the field, the value found and the bound.
SavedModel load_model(const std::string& path);

/// load_model on bytes already in memory; `name` stands for the file in messages.
SavedModel parse_model(std::string_view bytes, const std::string& name);

/// Throws InvalidArgument when `data` (read from `data_path`) does not fit the model from
/// `model_path`: feature or label count differs (message names both files and both values).
void check_model_fits(const ModelConfig& config, const std::string& model_path, const Dataset& data,
                      const std::string& data_path);

}  // namespace hetsgd
