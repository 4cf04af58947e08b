/// \file core/forest/projection_dot.h
/// Dot products of the label projections that a tree's k-means compares (ForestBuilder).
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hetsgd {

/// a0 . b0 and a1 . b1 over n floats, each with eight running sums (lane j takes the elements
/// c = j mod 8, the tail goes to lane 0) reduced pairwise, ((s0 + s1) + (s2 + s3)) + ((s4 +
/// s5) + (s6 + s7)): a single sum is a dependency chain the compiler may not reorder into vector
/// lanes (no -ffast-math), and k-means spends most of the forest's time here. The two dot
/// products' chains are independent, so the core overlaps them (a dot of 100 floats waits on
/// its additions' latency, not on loads or multiplies), and each has the bits of the same sums
/// taken one dot at a time. Written in SSE: each lane
/// is one of the eight sums, multiplied and added with the scalar code's two roundings.
inline void projection_dot2(const float* a0, const float* b0, const float* a1, const float* b1,
                            int n, float* out0, float* out1) {
  float s[8], t[8];
  int c = 0;
#if defined(__SSE2__)
  __m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps(), t0 = _mm_setzero_ps(), t1 = _mm_setzero_ps();
  for (; c + 8 <= n; c += 8) {
    s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a0 + c), _mm_loadu_ps(b0 + c)));
    s1 = _mm_add_ps(s1, _mm_mul_ps(_mm_loadu_ps(a0 + c + 4), _mm_loadu_ps(b0 + c + 4)));
    t0 = _mm_add_ps(t0, _mm_mul_ps(_mm_loadu_ps(a1 + c), _mm_loadu_ps(b1 + c)));
    t1 = _mm_add_ps(t1, _mm_mul_ps(_mm_loadu_ps(a1 + c + 4), _mm_loadu_ps(b1 + c + 4)));
  }
  _mm_storeu_ps(s, s0);
  _mm_storeu_ps(s + 4, s1);
  _mm_storeu_ps(t, t0);
  _mm_storeu_ps(t + 4, t1);
#else
  for (int j = 0; j < 8; ++j) s[j] = t[j] = 0.0f;
  for (; c + 8 <= n; c += 8) {
    for (int j = 0; j < 8; ++j) {
      s[j] += a0[c + j] * b0[c + j];
      t[j] += a1[c + j] * b1[c + j];
    }
  }
#endif
  for (; c < n; ++c) {
    s[0] += a0[c] * b0[c];
    t[0] += a1[c] * b1[c];
  }
  *out0 = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  *out1 = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

}  // namespace hetsgd
