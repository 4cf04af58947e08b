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
    s.by_output = l + 2 == w.size();
    total_ += s.in * s.out;
    s.b_offset = total_;
    total_ += s.out;
    layers_.push_back(s);
  }
}

void init_params(const ParamLayout& layout, std::uint64_t seed, float* params) {
  // Counter-based: each element depends only on (seed, its counter), so initialisation is
  // identical whatever the thread count or backend.
  for (const LayerSlice& s : layout.layers()) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(s.in));
    const auto draw = [&](index_t k) {
      return bound * (2.0f * uniform01(seed, static_cast<std::uint64_t>(k)) - 1.0f);
    };
    if (s.by_output) {
      // Stored [out x in]; drawn as element (i, j) of [in x out].
      for (index_t j = 0; j < s.out; ++j) {
        for (index_t i = 0; i < s.in; ++i) {
          params[s.w_offset + j * s.in + i] = draw(s.w_offset + i * s.out + j);
        }
      }
    } else {
      for (index_t k = s.w_offset; k < s.b_offset; ++k) params[k] = draw(k);
    }
    for (index_t k = s.b_offset; k < s.b_offset + s.out; ++k) params[k] = draw(k);
  }
}

}  // namespace hetsgd
