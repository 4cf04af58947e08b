/// \file kernels/cpu/vec_ops_impl.h
/// Internal to vec_ops*.cpp: the dispatch table of kernels/cpu/vec_ops.h and the loop bodies
/// and constants its ISA variants share. vec_ops_avx512.cpp and vec_ops_avx2.cpp each define
/// one table; vec_ops.cpp holds the baseline and picks a table at run time.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/math/optimizer_update.h"
#include "core/types.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HETSGD_VEC_X86 1
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers build some vectors from _mm512_undefined_ps(), which
// -Wmaybe-uninitialized (or, depending on inlining, -Wuninitialized) reports at every inlined
// use; the lanes are always written first.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#else
#define HETSGD_VEC_X86 0
#endif

namespace hetsgd::cpu::vec::detail {

/// The dispatch table: one implementation of each operation.
struct Kernels {
  const char* name;
  float (*softmax_ce_row)(const float*, index_t, const col_t*, index_t, float, float*);
  void (*adam_span)(float*, float*, float*, const float*, index_t, const math::AdamStep&, float,
                    float, float, float);
  void (*topk_row)(const float*, index_t, int, float*, col_t*);
  void (*relu)(float*, index_t);
  void (*relu_mask)(float*, const float*, index_t);
  void (*gather_sum)(const float*, index_t, const std::int32_t*, const float*, index_t,
                     const float*, bool, float*);
  void (*add_to)(float*, const float*, index_t);
  float (*exp_shift)(const float*, index_t, float, float, float*);
  std::int32_t (*dot_i8)(const std::int8_t*, const std::int8_t*, index_t);
};

// ---- shared loop bodies: inlined into each target below, then vectorised for its ISA -------

[[gnu::always_inline]] inline void relu_body(float* __restrict x, index_t n) {
  for (index_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

[[gnu::always_inline]] inline void add_to_body(float* __restrict dst, const float* __restrict src,
                                               index_t n) {
  for (index_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Integer sums are exact, so every ISA's reduction order gives the same result.
[[gnu::always_inline]] inline std::int32_t dot_i8_body(const std::int8_t* __restrict a,
                                                       const std::int8_t* __restrict b, index_t n) {
  std::int32_t s = 0;
  for (index_t i = 0; i < n; ++i) s += std::int32_t{a[i]} * std::int32_t{b[i]};
  return s;
}

[[gnu::always_inline]] inline void relu_mask_body(float* __restrict dx, const float* __restrict act,
                                                  index_t n) {
  for (index_t i = 0; i < n; ++i) dx[i] = act[i] > 0.0f ? dx[i] : 0.0f;
}

// Shared pieces of the SIMD softmax: the label term (read before grad overwrites z), the
// empty-row convention and the target subtraction, identical to math::softmax_ce_row().
inline float label_term(const float* z, const col_t* labels, index_t nl, float m) {
  float s = 0.0f;
  for (index_t i = 0; i < nl; ++i) s += z[labels[i]] - m;
  return s;
}

inline float empty_row(index_t n, float* grad) {
  if (grad != nullptr) std::memset(grad, 0, sizeof(float) * static_cast<size_t>(n));
  return 0.0f;
}

inline void subtract_targets(float* grad, const col_t* labels, index_t nl, float scale) {
  const float t = scale / static_cast<float>(nl);
  for (index_t i = 0; i < nl; ++i) grad[labels[i]] -= t;
}

// Cephes-style expf: exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n ln2 (two-part ln2),
// exp(r) by a degree-6 polynomial on |r| <= ln2/2. About 2 ulp on [-87, 88].
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                       kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
// Inputs are clamped to [kExpLo, kExpHi]; below kExpLo the result is ~1e-38 instead of a
// denormal or 0, an absolute error far below anything a softmax can resolve.
inline constexpr float kExpLo = -87.0f, kExpHi = 88.0f;

#if HETSGD_VEC_X86
/// The SIMD tables (vec_ops_avx512.cpp, vec_ops_avx2.cpp).
extern const Kernels kAvx512;
extern const Kernels kAvx2;
#endif

}  // namespace hetsgd::cpu::vec::detail
