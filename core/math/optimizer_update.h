/// \file core/math/optimizer_update.h
/// Per-element optimiser update rules (SGD, heavy-ball momentum, Adam), in PyTorch's form.
///
/// Each rule updates one parameter `w` from its gradient `g` in place; state (velocity, Adam
/// moments) lives next to the parameter in same-shaped buffers owned by the device. Weight
/// decay is the classic L2 form (added to the gradient, as torch.optim.SGD / Adam with
/// `weight_decay`), applied by the caller only to weights, not biases, and on the sparse first
/// layer only to rows the batch touched (lazy). Usable from host and device code.
#pragma once

#include <math.h>

#include "core/hd.h"

namespace hetsgd::math {

/// Plain SGD: w -= lr * (g + wd * w).
HETSGD_HD inline void sgd_update(float& w, float g, float lr, float wd) { w -= lr * (g + wd * w); }

/// Heavy-ball momentum (torch.optim.SGD, dampening 0, not Nesterov):
/// g' = g + wd*w; v = mu*v + g'; w -= lr*v. With v starting at 0 the first step equals SGD.
HETSGD_HD inline void momentum_update(float& w, float& v, float g, float lr, float mu, float wd) {
  const float gd = g + wd * w;
  v = mu * v + gd;
  w -= lr * v;
}

/// Adam bias corrections for global step `t` >= 1 (the number of optimiser steps taken,
/// including this one): bc1 = 1 - beta1^t, bc2 = 1 - beta2^t. Computed once per step on the
/// host and passed to adam_update(); lazy rows use the global t, as in PyTorch SparseAdam.
struct AdamStep {
  float lr_over_bc1;   ///< lr / (1 - beta1^t)
  float inv_sqrt_bc2;  ///< 1 / sqrt(1 - beta2^t)
};

/// Builds the per-step constants of adam_update() (double internally: beta2^t for t ~ 1e6
/// must not lose the small difference from 1).
HETSGD_HD inline AdamStep adam_step(float lr, float beta1, float beta2, long long t) {
  const double bc1 = 1.0 - pow(static_cast<double>(beta1), static_cast<double>(t));
  const double bc2 = 1.0 - pow(static_cast<double>(beta2), static_cast<double>(t));
  AdamStep s;
  s.lr_over_bc1 = static_cast<float>(lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / sqrt(bc2));
  return s;
}

/// Adam (torch.optim.Adam, L2 weight decay, no amsgrad):
/// g' = g + wd*w; m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
/// w -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps).
HETSGD_HD inline void adam_update(float& w, float& m, float& v, float g, const AdamStep& s,
                                  float beta1, float beta2, float eps, float wd) {
  const float gd = g + wd * w;
  m = beta1 * m + (1.0f - beta1) * gd;
  v = beta2 * v + (1.0f - beta2) * gd * gd;
  w -= s.lr_over_bc1 * m / (sqrtf(v) * s.inv_sqrt_bc2 + eps);
}

}  // namespace hetsgd::math
