/// \file core/forest/half.h
/// IEEE 754 binary16 ("half") conversions for the forest's stored centroid values and leaf
/// frequencies: 2 bytes an entry instead of 4 (core/forest/README.md, "Bytes"). The builder
/// rounds every stored value through to_half() when it makes it, so the forest that ranks
/// during training is the one the file holds, bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace hetsgd {

/// `v` rounded to the nearest binary16 (ties to even), as its bits: infinity past 65504's
/// rounding range, NaN kept as a quiet NaN, below 2^-14 a subnormal.
inline std::uint16_t to_half(float v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
  const float a = std::fabs(v);
  if (std::isnan(a)) return static_cast<std::uint16_t>(sign | 0x7e00u);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (a < 6.103515625e-05f) {
    // Units of 2^-24 (scaling by a power of 2 is exact); a carry into 1024 is the smallest
    // normal's bits, as it should be.
    return static_cast<std::uint16_t>(sign |
                                      static_cast<std::uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  // a = (1 + f / 1024) 2^(E - 15) with E = e + 14; 2m - 1 and its product by 1024 are exact.
  float f = std::nearbyint((2.0f * m - 1.0f) * 1024.0f);
  int E = e + 14;
  if (f == 1024.0f) {  // rounded up to the next power of two
    f = 0.0f;
    ++E;
  }
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(E << 10) |
                                    static_cast<std::uint16_t>(f));
}

/// The float a binary16's bits stand for (exact).
inline float from_half(std::uint16_t h) {
  const float sign = (h & 0x8000u) != 0 ? -1.0f : 1.0f;
  const int E = (h >> 10) & 0x1f;
  const int f = h & 0x3ff;
  if (E == 0) return sign * std::ldexp(static_cast<float>(f), -24);
  if (E == 31)
    return f == 0 ? sign * std::numeric_limits<float>::infinity()
                  : std::numeric_limits<float>::quiet_NaN();
  return sign * std::ldexp(static_cast<float>(1024 + f), E - 25);
}

/// `v` rounded to the nearest binary16, as a float.
inline float round_to_half(float v) { return from_half(to_half(v)); }

}  // namespace hetsgd
