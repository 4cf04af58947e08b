/// \file core/math/centre_update.h
/// The per-element arithmetic of a model merge (core/engine/README.md §Merge), shared by the host
/// merge and the GPU communicators.
///
/// Centre update with elastic rate alpha and block momentum mu, in double per element:
///   z' = z + alpha (avg - z) + mu (z - z_prev),   z_prev' = z.
/// Pull of a replica towards the centre (EASGD style): w' = w + beta (z - w).
/// These are the formulas of core/engine/merge_weights.cpp, one element at a time. Usable from
/// host and device code; neither allocates nor throws.
#pragma once

#include "core/hd.h"

namespace hetsgd::math {

/// Updates one centre element `z` and its history `z_prev` from the replicas' average `avg`.
HETSGD_HD inline void centre_update(float& z, float& z_prev, float avg, double alpha, double mu) {
  const double zk = z;
  const double next =
      zk + alpha * (static_cast<double>(avg) - zk) + mu * (zk - static_cast<double>(z_prev));
  z_prev = z;
  z = static_cast<float>(next);
}

/// One replica element pulled by `beta` towards the centre element `z`.
HETSGD_HD inline float pull_towards(float w, float z, double beta) {
  const double wk = w;
  return static_cast<float>(wk + beta * (static_cast<double>(z) - wk));
}

}  // namespace hetsgd::math
