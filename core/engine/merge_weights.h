/// \file core/engine/merge_weights.h
/// Normalised merge weights and the elastic centre update (core/engine/README.md §Adaptive SGD).
///
/// A = sum_i p_i W_i with sum_i p_i = 1 always; Z' = Z + alpha (A - Z) + mu (Z - Z_prev);
/// replicas restart from Z' (beta = 1) or are pulled W_i += beta (Z' - W_i).
/// alpha = beta = 1, mu = 0 is plain model averaging. Pure functions on host buffers.
#pragma once

#include <vector>

#include "core/engine/train_options.h"
#include "core/types.h"

namespace hetsgd {

/// p_i for the devices of one round, from their update counts n_i and point counts m_i (same
/// length). Entries of devices with `active[i] == false` (failed ones) are 0; the others sum to
/// 1. When every active count is 0 (nothing trained), the weights are uniform over the active
/// devices. Throws InvalidArgument if no device is active or the lengths differ.
std::vector<double> merge_weights(MergeWeights kind, const std::vector<index_t>& updates,
                                  const std::vector<index_t>& samples,
                                  const std::vector<bool>& active);

/// Elastic centre update on `n` floats: z_prev <- z, z <- z + alpha (avg - z) + mu (z - z_prev)
/// (computed in double, so alpha = 1, mu = 0 gives exactly avg).
void update_centre(float* z, float* z_prev, const float* avg, index_t n, double alpha, double mu);

/// w <- w + beta (z - w) on `n` floats (beta = 1 copies z).
void pull_towards(float* w, const float* z, index_t n, double beta);

}  // namespace hetsgd
