/// \file core/math/dropout.h
/// Inverted dropout on hidden activations with a counter-based mask, for host and device code.
///
/// Training multiplies each hidden activation h_ri by m_ri / (1 - p), with m_ri in {0, 1} kept
/// with probability 1 - p, so the expected activation equals the evaluation-time one and
/// evaluation and prediction run the layer unchanged. The mask bit of element i of a batch's
/// [rows x width] activations of layer `layer` is a pure function of (seed, device ordinal,
/// optimiser step, layer, i) (core/random.h's hash64): it does not depend on the thread count
/// or the backend, so the CPU and CUDA devices draw the same mask for the same step, a run is
/// reproducible bit for bit, and repeated forward passes at one step (a finite-difference
/// check) see one fixed mask.
#pragma once

#include <cstdint>

#include "core/hd.h"
#include "core/random.h"
#include "core/types.h"

namespace hetsgd::math {

/// Seed of the mask stream of one layer at one optimiser step of one device. `step` is the
/// device's step count before the update the batch feeds; `ordinal` decorrelates replicas that
/// train different rows at the same step.
HETSGD_HD inline std::uint64_t dropout_stream(std::uint64_t seed, int ordinal, std::int64_t step,
                                              int layer) {
  const std::uint64_t s = hash64(seed ^ 0x6A09E667F3BCC909ull, static_cast<std::uint64_t>(step));
  return hash64(s, (static_cast<std::uint64_t>(ordinal) << 16) ^ static_cast<std::uint64_t>(layer));
}

/// Drop threshold on the hash's top 32 bits: an element is kept when they are >= this value,
/// which happens with probability 1 - p (to 2^-32). `p` in [0, 1).
HETSGD_HD inline std::uint32_t dropout_threshold(float p) {
  return static_cast<std::uint32_t>(static_cast<double>(p) * 4294967296.0);
}

/// True when element `i` of the stream is kept.
HETSGD_HD inline bool dropout_keep(std::uint64_t stream, std::uint64_t i, std::uint32_t threshold) {
  return static_cast<std::uint32_t>(hash64(stream, i) >> 32) >= threshold;
}

/// The dropped-out activation: x * keep_scale when kept, else 0 (keep_scale = 1 / (1 - p)).
HETSGD_HD inline float dropout_apply(float x, std::uint64_t stream, std::uint64_t i,
                                     std::uint32_t threshold, float keep_scale) {
  return dropout_keep(stream, i, threshold) ? x * keep_scale : 0.0f;
}

}  // namespace hetsgd::math
