#include "core/label_prior.h"

#include <cmath>

#include "core/error.h"

namespace hetsgd {

void add_label_prior(const ParamLayout& layout, const std::vector<float>& inv_propensity, double g,
                     std::vector<float>* params) {
  HETSGD_CHECK(g >= 0.0 && g <= kMaxTailWeight,
               "tail weight " << g << " outside [0, " << kMaxTailWeight << "]");
  HETSGD_CHECK(layout.num_layers() >= 1, "add_label_prior: the layout has no layer");
  HETSGD_CHECK(
      static_cast<index_t>(params->size()) == layout.total(),
      "add_label_prior: " << params->size() << " parameters, the layout has " << layout.total());
  const LayerSlice& out = layout.layers().back();
  HETSGD_CHECK(static_cast<index_t>(inv_propensity.size()) == out.out,
               "add_label_prior: " << inv_propensity.size() << " inverse propensities for "
                                   << out.out << " labels");
  if (g == 0.0) return;
  float* bias = params->data() + out.b_offset;
  for (index_t l = 0; l < out.out; ++l) {
    const float ip = inv_propensity[static_cast<size_t>(l)];
    HETSGD_CHECK(ip >= 1.0f,
                 "add_label_prior: label " << l << " inverse propensity " << ip << " < 1");
    bias[l] += static_cast<float>(g * std::log(static_cast<double>(ip)));
  }
}

}  // namespace hetsgd
