/// \file core/model_config.h
/// The sparse-input MLP (DESIGN §4) and its optimiser, as plain configuration values.
///
/// Layers: input (num_features, sparse) -> hidden[0] -> ... -> hidden[H-1] -> num_labels, ReLU
/// after every hidden layer. Weights are stored row-major as [in x out], so the first layer's
/// row f is the embedding of feature f and its gradient is row-sparse.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace hetsgd {

/// Output loss.
enum class Loss {
  kSoftmax,  ///< softmax cross-entropy against the multi-hot target normalised to sum 1
  kBce,      ///< one-vs-all sigmoid binary cross-entropy, averaged over labels
};

/// Optimiser kind. State is per replica; on the sparse first layer it is updated lazily
/// (only rows of features present in the batch).
enum class OptimizerKind { kSgd, kAdam };

/// Optimiser hyper-parameters. The learning rate is not here: the scheduler passes it per step.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float momentum = 0.0f;      ///< SGD heavy-ball momentum (0 = plain SGD)
  float beta1 = 0.9f;         ///< Adam
  float beta2 = 0.999f;       ///< Adam
  float eps = 1e-8f;          ///< Adam
  float weight_decay = 0.0f;  ///< L2 on weights (not biases), applied to touched rows only
};

/// Shape and loss of the model.
struct ModelConfig {
  index_t num_features = 0;          ///< d
  index_t num_labels = 0;            ///< L
  std::vector<index_t> hidden{128};  ///< hidden layer widths (at least one)
  Loss loss = Loss::kSoftmax;
  OptimizerConfig optimizer;
  std::uint64_t seed = 1;  ///< initialisation seed

  /// Layer widths: {d, hidden..., L}.
  std::vector<index_t> widths() const;
  /// Throws InvalidArgument if any width is < 1.
  void validate() const;
};

/// "softmax" / "bce" <-> Loss; throws InvalidArgument on an unknown name.
Loss parse_loss(const std::string& name);
const char* to_string(Loss loss);
/// "sgd" / "adam" <-> OptimizerKind.
OptimizerKind parse_optimizer(const std::string& name);
const char* to_string(OptimizerKind kind);

}  // namespace hetsgd
