#include "core/model_config.h"

#include "core/error.h"

namespace hetsgd {

std::vector<index_t> ModelConfig::widths() const {
  std::vector<index_t> w;
  w.reserve(hidden.size() + 2);
  w.push_back(num_features);
  w.insert(w.end(), hidden.begin(), hidden.end());
  w.push_back(num_labels);
  return w;
}

void ModelConfig::validate() const {
  HETSGD_CHECK(num_features >= 1, "num_features " << num_features << " < 1");
  HETSGD_CHECK(num_labels >= 1, "num_labels " << num_labels << " < 1");
  HETSGD_CHECK(!hidden.empty(), "the model needs at least one hidden layer");
  for (index_t h : hidden) HETSGD_CHECK(h >= 1, "hidden width " << h << " < 1");
}

Loss parse_loss(const std::string& name) {
  if (name == "softmax") return Loss::kSoftmax;
  if (name == "bce") return Loss::kBce;
  throw InvalidArgument("unknown loss '" + name + "' (expected softmax or bce)");
}

const char* to_string(Loss loss) { return loss == Loss::kSoftmax ? "softmax" : "bce"; }

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  throw InvalidArgument("unknown optimizer '" + name + "' (expected sgd or adam)");
}

const char* to_string(OptimizerKind kind) { return kind == OptimizerKind::kSgd ? "sgd" : "adam"; }

}  // namespace hetsgd
