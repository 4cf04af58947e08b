#include "core/engine/run_checks.h"

#include <cmath>

#include "core/error.h"

namespace hetsgd {

void check_shapes(const ModelConfig& cfg, const Dataset& train, const Dataset& test) {
  HETSGD_CHECK(train.rows() >= 1, "train: the training set has no rows");
  HETSGD_CHECK(train.num_features <= cfg.num_features,
               "train: training set has " << train.num_features << " features, the model "
                                          << cfg.num_features);
  HETSGD_CHECK(train.num_labels == cfg.num_labels, "train: training set has "
                                                       << train.num_labels << " labels, the model "
                                                       << cfg.num_labels);
  HETSGD_CHECK(test.num_features <= cfg.num_features,
               "train: evaluation set has " << test.num_features << " features, the model "
                                            << cfg.num_features);
  HETSGD_CHECK(test.num_labels == cfg.num_labels, "train: evaluation set has "
                                                      << test.num_labels << " labels, the model "
                                                      << cfg.num_labels);
}

index_t first_non_finite(const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return static_cast<index_t>(i);
  }
  return -1;
}

}  // namespace hetsgd
