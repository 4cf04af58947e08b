/// \file core/random.h
/// Counter-based random numbers (SplitMix64), reproducible across threads and backends.
///
/// `uniform01(seed, counter)` is a pure function, so the k-th random number of a stream never
/// depends on how work was split between threads. Usable from host and device code.
#pragma once

#include <cstdint>

#include "core/hd.h"

namespace hetsgd {

/// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
HETSGD_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Random 64-bit value for (seed, counter).
HETSGD_HD inline std::uint64_t hash64(std::uint64_t seed, std::uint64_t counter) {
  return mix64(mix64(seed) ^ (counter * 0xD1B54A32D192ED03ull));
}

/// Uniform float in [0, 1) for (seed, counter), 24 random mantissa bits.
HETSGD_HD inline float uniform01(std::uint64_t seed, std::uint64_t counter) {
  return static_cast<float>(hash64(seed, counter) >> 40) * (1.0f / 16777216.0f);
}

/// A small sequential generator for host code (std::shuffle and friends).
class SplitMix64 {
 public:
  using result_type = std::uint64_t;
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() { return mix64(state_++ * 0x9E3779B97F4A7C15ull + 1); }
  /// Uniform float in [0, 1).
  float uniform() { return static_cast<float>((*this)() >> 40) * (1.0f / 16777216.0f); }

 private:
  std::uint64_t state_;
};

}  // namespace hetsgd
