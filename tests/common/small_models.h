/// \file tests/common/small_models.h
/// Small models for device tests: their shapes, and a device's vectors read back.
#pragma once

#include <utility>
#include <vector>

#include "core/device.h"
#include "core/model_config.h"

namespace hetsgd::test {

/// A model of `features` inputs, `labels` outputs and hidden layers of widths `hidden`; all
/// else at ModelConfig's defaults.
inline ModelConfig mlp(index_t features, index_t labels, std::vector<index_t> hidden) {
  ModelConfig c;
  c.num_features = features;
  c.num_labels = labels;
  c.hidden = std::move(hidden);
  return c;
}

/// The device's parameters.
inline std::vector<float> params_of(Device& d) {
  std::vector<float> p(static_cast<size_t>(d.layout().total()));
  d.read_params(p.data());
  return p;
}

/// The device's gradient buffer.
inline std::vector<float> grad_of(Device& d) {
  std::vector<float> g(static_cast<size_t>(d.layout().total()));
  d.read_gradient(g.data());
  return g;
}

}  // namespace hetsgd::test
