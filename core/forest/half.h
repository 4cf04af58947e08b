/// \file core/forest/half.h
/// IEEE 754 binary16 ("half") conversions for the forest's stored centroid values and leaf
/// frequencies: 2 bytes an entry instead of 4 (core/forest/README.md, "Bytes"). The builder
/// rounds every stored value through to_half() when it makes it, so the forest that ranks
/// during training is the one the file holds, bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hetsgd {

/// `v` rounded to the nearest binary16 (ties to even), as its bits: infinity past 65504's
/// rounding range, NaN kept as a quiet NaN, below 2^-14 a subnormal. Bit arithmetic: the
/// builder rounds every centroid entry it makes, so this is on its hot path.
inline std::uint16_t to_half(float v) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (u >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (u < 0x38800000u) {
    // Below 2^-14: units of 2^-24 (scaling by a power of two is exact; the default rounding
    // is to nearest, ties to even); a carry into 1024 is the smallest normal's bits.
    float a = 0.0f;
    std::memcpy(&a, &u, sizeof a);
    return static_cast<std::uint16_t>(sign |
                                      static_cast<std::uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  // Drop 13 mantissa bits rounding to nearest, ties to even; a carry out of the mantissa
  // moves the exponent up, as it should. Then rebias the exponent from 127 to 15.
  u += 0xfffu + ((u >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | ((u >> 13) - (112u << 10)));
}

/// The float a binary16's bits stand for (exact).
inline float from_half(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t E = (h >> 10) & 0x1fu;
  const std::uint32_t f = h & 0x3ffu;
  std::uint32_t u = 0;
  if (E == 0) {
    const float a = static_cast<float>(f) * 5.9604644775390625e-08f;  // f 2^-24, exact
    std::memcpy(&u, &a, sizeof u);
    u |= sign;
  } else if (E == 31) {
    u = sign | 0x7f800000u | (f != 0 ? 0x400000u : 0u);
  } else {
    u = sign | ((E + 112u) << 23) | (f << 13);
  }
  float out = 0.0f;
  std::memcpy(&out, &u, sizeof out);
  return out;
}

/// `v` rounded to the nearest binary16, as a float.
inline float round_to_half(float v) { return from_half(to_half(v)); }

}  // namespace hetsgd
