/// \file tests/common/small_models.h
/// Small models for device tests: their shapes, and a device's vectors read back.
#pragma once

#include <utility>
#include <vector>

#include "core/device.h"
#include "core/model_config.h"

namespace hetsgd::test {

/// The model tests build unless they say otherwise: one hidden layer of 128, no dropout or
/// label smoothing, every label scored, index builds waited for. Explicit values, so that a
/// test does not follow ModelConfig's automatic defaults (resolve_model()).
inline ModelConfig fixed_model() {
  ModelConfig c;
  c.hidden = {128};
  c.output_layer = OutputLayer::kFull;
  c.dropout = 0.0f;
  c.label_smoothing = 0.0f;
  c.shortlist.wait_for_index = true;
  return c;
}

/// A model of `features` inputs, `labels` outputs and hidden layers of widths `hidden`; all
/// else as fixed_model().
inline ModelConfig mlp(index_t features, index_t labels, std::vector<index_t> hidden) {
  ModelConfig c = fixed_model();
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
