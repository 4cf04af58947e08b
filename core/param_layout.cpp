#include "core/param_layout.h"

#include <cmath>

#include "core/random.h"

namespace hetsgd {

ParamLayout::ParamLayout(const ModelConfig& config) {
  config.validate();
  const std::vector<index_t> w = config.widths();
  for (size_t l = 0; l + 1 < w.size(); ++l) {
    LayerSlice s;
    s.in = w[l];
    s.out = w[l + 1];
    s.w_offset = total_;
    total_ += s.in * s.out;
    s.b_offset = total_;
    total_ += s.out;
    layers_.push_back(s);
  }
}

void init_params(const ParamLayout& layout, std::uint64_t seed, float* params) {
  // Counter-based: element k of the buffer depends only on (seed, k), so initialisation is
  // identical whatever the thread count or backend.
  for (const LayerSlice& s : layout.layers()) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(s.in));
    const index_t end = s.b_offset + s.out;
    for (index_t k = s.w_offset; k < end; ++k) {
      params[k] = bound * (2.0f * uniform01(seed, static_cast<std::uint64_t>(k)) - 1.0f);
    }
  }
}

}  // namespace hetsgd
