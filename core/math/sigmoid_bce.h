/// \file core/math/sigmoid_bce.h
/// One-vs-all sigmoid binary cross-entropy, one element at a time (PyTorch's
/// BCEWithLogitsLoss, whose default reduction is the mean over all rows x labels elements).
///
/// For a logit x and target y in {0, 1}:
///   loss = max(x, 0) - x*y + log1p(exp(-|x|))     (= -y log s(x) - (1-y) log(1 - s(x)))
///   dloss/dx = sigmoid(x) - y.
/// The max/log1p form never evaluates exp of a positive number, so it is finite for every
/// finite x and exact to float rounding for large |x|. Usable from host and device code.
#pragma once

#include <math.h>

#include "core/hd.h"

namespace hetsgd::math {

/// Logistic sigmoid 1 / (1 + exp(-x)), evaluated without overflow for either sign of x.
HETSGD_HD inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

/// Binary cross-entropy of logit `x` against target `y` (0 or 1; soft targets work too).
HETSGD_HD inline float bce_loss(float x, float y) {
  return fmaxf(x, 0.0f) - x * y + log1pf(expf(-fabsf(x)));
}

/// d bce_loss / dx = sigmoid(x) - y.
HETSGD_HD inline float bce_grad(float x, float y) { return sigmoid(x) - y; }

}  // namespace hetsgd::math
