#include "core/engine/run_checks.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "core/error.h"

namespace hetsgd {

void check_shapes(const ModelConfig& cfg, const Dataset& train, const Dataset& test) {
  HETSGD_CHECK(train.rows() >= 1, "train: the training set has no rows");
  for (const auto& [set, what] : {std::pair<const Dataset*, const char*>{&train, "training set"},
                                  {&test, "evaluation set"}}) {
    HETSGD_CHECK(set->num_features <= cfg.num_features,
                 "train: " << what << " has " << set->num_features << " features, the model "
                           << cfg.num_features);
    HETSGD_CHECK(set->num_labels == cfg.num_labels, "train: " << what << " has " << set->num_labels
                                                              << " labels, the model "
                                                              << cfg.num_labels);
  }
}

index_t first_non_finite(const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return static_cast<index_t>(i);
  }
  return -1;
}

}  // namespace hetsgd
