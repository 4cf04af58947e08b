#include "kernels/cpu/vec_ops.h"

#include <math.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/math/softmax_ce.h"
#include "core/math/topk.h"

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

namespace hetsgd::cpu::vec {
namespace {

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

// ---- baseline ---------------------------------------------------------------------------------

float exp_shift_base(const float* z, index_t n, float shift, float scale, float* out) {
  float sum = 0.0f;
  for (index_t j = 0; j < n; ++j) {
    const float e = expf(z[j] - shift);
    sum += e;
    if (out != nullptr) out[j] = scale * e;
  }
  return sum;
}

float softmax_base(const float* z, index_t n, const col_t* labels, index_t nl, float scale,
                   float* grad) {
  return math::softmax_ce_row(z, n, labels, nl, scale, grad);
}

void adam_base(float* w, float* m, float* v, const float* g, index_t n, const math::AdamStep& s,
               float b1, float b2, float eps, float wd) {
  for (index_t i = 0; i < n; ++i) math::adam_update(w[i], m[i], v[i], g[i], s, b1, b2, eps, wd);
}

void topk_base(const float* z, index_t n, int k, float* scores, col_t* ids) {
  math::topk_row(z, n, k, scores, ids);
}

void relu_base(float* x, index_t n) { relu_body(x, n); }
void add_to_base(float* dst, const float* src, index_t n) { add_to_body(dst, src, n); }
std::int32_t dot_i8_base(const std::int8_t* a, const std::int8_t* b, index_t n) {
  return dot_i8_body(a, b, n);
}

__attribute__((optimize("fp-contract=off"))) void gather_base(const float* base, index_t width,
                                                              const std::int32_t* idx,
                                                              const float* vals, index_t count,
                                                              const float* init, bool relu,
                                                              float* out) {
  for (index_t j = 0; j < width; ++j) out[j] = init != nullptr ? init[j] : 0.0f;
  for (index_t i = 0; i < count; ++i) {
    const float v = vals[i];
    const float* __restrict r = base + static_cast<index_t>(idx[i]) * width;
    for (index_t j = 0; j < width; ++j) out[j] += v * r[j];
  }
  if (relu) relu_body(out, width);
}
void relu_mask_base(float* dx, const float* act, index_t n) { relu_mask_body(dx, act, n); }

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
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
// Inputs are clamped to [kExpLo, kExpHi]; below kExpLo the result is ~1e-38 instead of a
// denormal or 0, an absolute error far below anything a softmax can resolve.
constexpr float kExpLo = -87.0f, kExpHi = 88.0f;

#if HETSGD_VEC_X86

// ---- AVX-512 ----------------------------------------------------------------------------------
#define HETSGD_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma")))

HETSGD_AVX512 inline __m512 exp512(__m512 x) {
  // max/min return their second operand when either is NaN, so a NaN input stays NaN.
  x = _mm512_max_ps(_mm512_set1_ps(kExpLo), x);
  x = _mm512_min_ps(_mm512_set1_ps(kExpHi), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

HETSGD_AVX512 inline __mmask16 tail_mask16(index_t left) {
  return static_cast<__mmask16>((1u << left) - 1u);
}

HETSGD_AVX512 float row_max512(const float* z, index_t n) {
  // max(z, acc) returns acc when z is NaN: NaN logits are skipped, as in math::row_max().
  __m512 acc = _mm512_set1_ps(-INFINITY);
  index_t j = 0;
  for (; j + 16 <= n; j += 16) acc = _mm512_max_ps(_mm512_loadu_ps(z + j), acc);
  if (j < n) {
    const __m512 t = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask16(n - j), z + j);
    acc = _mm512_max_ps(t, acc);
  }
  return _mm512_reduce_max_ps(acc);
}

HETSGD_AVX512 float softmax_avx512(const float* z, index_t n, const col_t* labels, index_t nl,
                                   float scale, float* grad) {
  if (nl == 0) return empty_row(n, grad);
  const float m = row_max512(z, n);
  const float label_sum = label_term(z, labels, nl, m);
  const __m512 mv = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  index_t j = 0;
  const index_t tail = n & 15;
  const __mmask16 tm = tail_mask16(tail);
  if (grad != nullptr) {
    for (; j + 16 <= n; j += 16) {
      const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(z + j), mv));
      _mm512_storeu_ps(grad + j, e);
      acc = _mm512_add_ps(acc, e);
    }
    if (tail != 0) {
      const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tm, z + j), mv));
      _mm512_mask_storeu_ps(grad + j, tm, e);
      acc = _mm512_mask_add_ps(acc, tm, acc, e);
    }
    const float sum = _mm512_reduce_add_ps(acc);
    const __m512 inv = _mm512_set1_ps(scale / sum);
    for (j = 0; j + 16 <= n; j += 16) {
      _mm512_storeu_ps(grad + j, _mm512_mul_ps(_mm512_loadu_ps(grad + j), inv));
    }
    if (tail != 0) {
      _mm512_mask_storeu_ps(grad + j, tm, _mm512_mul_ps(_mm512_maskz_loadu_ps(tm, grad + j), inv));
    }
    subtract_targets(grad, labels, nl, scale);
    return logf(sum) - label_sum / static_cast<float>(nl);
  }
  for (; j + 16 <= n; j += 16) {
    acc = _mm512_add_ps(acc, exp512(_mm512_sub_ps(_mm512_loadu_ps(z + j), mv)));
  }
  if (tail != 0) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tm, z + j), mv));
    acc = _mm512_mask_add_ps(acc, tm, acc, e);
  }
  return logf(_mm512_reduce_add_ps(acc)) - label_sum / static_cast<float>(nl);
}

// Adam with separate multiplies and adds in math::adam_update()'s order (no FMA), so each lane
// rounds exactly like the scalar rule. The optimize attribute keeps the compiler from
// contracting them.
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"), optimize("fp-contract=off"))) void
adam_avx512(float* w, float* m, float* v, const float* g, index_t n, const math::AdamStep& s,
            float b1, float b2, float eps, float wd) {
  const __m512 wdv = _mm512_set1_ps(wd), b1v = _mm512_set1_ps(b1), b2v = _mm512_set1_ps(b2);
  const __m512 c1 = _mm512_set1_ps(1.0f - b1), c2 = _mm512_set1_ps(1.0f - b2);
  const __m512 lr = _mm512_set1_ps(s.lr_over_bc1), isb = _mm512_set1_ps(s.inv_sqrt_bc2);
  const __m512 ev = _mm512_set1_ps(eps);
  index_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 wi = _mm512_loadu_ps(w + i);
    const __m512 gd = _mm512_add_ps(_mm512_loadu_ps(g + i), _mm512_mul_ps(wdv, wi));
    const __m512 mi =
        _mm512_add_ps(_mm512_mul_ps(b1v, _mm512_loadu_ps(m + i)), _mm512_mul_ps(c1, gd));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2v, _mm512_loadu_ps(v + i)),
                                    _mm512_mul_ps(_mm512_mul_ps(c2, gd), gd));
    const __m512 den = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(vi), isb), ev);
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    _mm512_storeu_ps(w + i, _mm512_sub_ps(wi, _mm512_div_ps(_mm512_mul_ps(lr, mi), den)));
  }
  for (; i < n; ++i) math::adam_update(w[i], m[i], v[i], g[i], s, b1, b2, eps, wd);
}

HETSGD_AVX512 void topk_avx512(const float* z, index_t n, int k, float* scores, col_t* ids) {
  if (k <= 0) return;
  int size = 0;
  index_t j = 0;
  while (j < n) {
    if (size == k && j + 16 <= n) {
      // Scanning in id order, a score equal to the current k-th has a larger id than every
      // listed one, so only scores strictly above the k-th can enter; NaN compares false.
      const __mmask16 hit =
          _mm512_cmp_ps_mask(_mm512_loadu_ps(z + j), _mm512_set1_ps(scores[k - 1]), _CMP_GT_OQ);
      if (hit == 0) {
        j += 16;
        continue;
      }
      const index_t stop = j + 16;
      for (; j < stop; ++j) math::topk_insert(scores, ids, k, size, z[j], static_cast<col_t>(j));
      continue;
    }
    math::topk_insert(scores, ids, k, size, z[j], static_cast<col_t>(j));
    ++j;
  }
  for (int r = size; r < k; ++r) {
    scores[r] = -INFINITY;
    ids[r] = -1;
  }
}

// Accumulators stay in registers across the whole index list (64 columns at a time), so each
// selected row costs loads only, not a load-add-store of the output per row.
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"), optimize("fp-contract=off"))) void
gather_avx512(const float* base, index_t width, const std::int32_t* idx, const float* vals,
              index_t count, const float* init, bool relu, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  index_t c = 0;
  for (; c + 64 <= width; c += 64) {
    __m512 a0 = init ? _mm512_loadu_ps(init + c) : zero;
    __m512 a1 = init ? _mm512_loadu_ps(init + c + 16) : zero;
    __m512 a2 = init ? _mm512_loadu_ps(init + c + 32) : zero;
    __m512 a3 = init ? _mm512_loadu_ps(init + c + 48) : zero;
    for (index_t i = 0; i < count; ++i) {
      const __m512 v = _mm512_set1_ps(vals[i]);
      const float* r = base + static_cast<index_t>(idx[i]) * width + c;
      a0 = _mm512_add_ps(a0, _mm512_mul_ps(v, _mm512_loadu_ps(r)));
      a1 = _mm512_add_ps(a1, _mm512_mul_ps(v, _mm512_loadu_ps(r + 16)));
      a2 = _mm512_add_ps(a2, _mm512_mul_ps(v, _mm512_loadu_ps(r + 32)));
      a3 = _mm512_add_ps(a3, _mm512_mul_ps(v, _mm512_loadu_ps(r + 48)));
    }
    if (relu) {
      a0 = _mm512_max_ps(a0, zero);
      a1 = _mm512_max_ps(a1, zero);
      a2 = _mm512_max_ps(a2, zero);
      a3 = _mm512_max_ps(a3, zero);
    }
    _mm512_storeu_ps(out + c, a0);
    _mm512_storeu_ps(out + c + 16, a1);
    _mm512_storeu_ps(out + c + 32, a2);
    _mm512_storeu_ps(out + c + 48, a3);
  }
  for (; c < width; c += 16) {
    const __mmask16 m = width - c >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask16(width - c);
    __m512 a = init ? _mm512_maskz_loadu_ps(m, init + c) : zero;
    for (index_t i = 0; i < count; ++i) {
      const float* r = base + static_cast<index_t>(idx[i]) * width + c;
      a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(vals[i]), _mm512_maskz_loadu_ps(m, r)));
    }
    // max_ps returns its second operand (0) for NaN and for -0, exactly like x > 0 ? x : 0.
    if (relu) a = _mm512_max_ps(a, zero);
    _mm512_mask_storeu_ps(out + c, m, a);
  }
}

HETSGD_AVX512 void relu_avx512(float* x, index_t n) { relu_body(x, n); }
HETSGD_AVX512 std::int32_t dot_i8_avx512(const std::int8_t* a, const std::int8_t* b, index_t n) {
  return dot_i8_body(a, b, n);
}
HETSGD_AVX512 void add_to_avx512(float* dst, const float* src, index_t n) {
  add_to_body(dst, src, n);
}
HETSGD_AVX512 void relu_mask_avx512(float* dx, const float* act, index_t n) {
  relu_mask_body(dx, act, n);
}

HETSGD_AVX512 float exp_shift_avx512(const float* z, index_t n, float shift, float scale,
                                     float* out) {
  const __m512 sv = _mm512_set1_ps(shift);
  const __m512 kv = _mm512_set1_ps(scale);
  __m512 acc = _mm512_setzero_ps();
  index_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(z + j), sv));
    acc = _mm512_add_ps(acc, e);
    if (out != nullptr) _mm512_storeu_ps(out + j, _mm512_mul_ps(kv, e));
  }
  if (j < n) {
    const __mmask16 tm = tail_mask16(n - j);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tm, z + j), sv));
    acc = _mm512_mask_add_ps(acc, tm, acc, e);
    if (out != nullptr) _mm512_mask_storeu_ps(out + j, tm, _mm512_mul_ps(kv, e));
  }
  return _mm512_reduce_add_ps(acc);
}

// ---- AVX2 + FMA -------------------------------------------------------------------------------
#define HETSGD_AVX2 __attribute__((target("avx2,fma")))

HETSGD_AVX2 inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(kExpLo), x);
  x = _mm256_min_ps(_mm256_set1_ps(kExpHi), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n from the exponent bits; n is in [-126, 127] after the clamp. A NaN input gives an
  // arbitrary n but p is already NaN.
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

HETSGD_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HETSGD_AVX2 float exp_shift_avx2(const float* z, index_t n, float shift, float scale, float* out) {
  const __m256 sv = _mm256_set1_ps(shift);
  const __m256 kv = _mm256_set1_ps(scale);
  __m256 acc = _mm256_setzero_ps();
  index_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(z + j), sv));
    acc = _mm256_add_ps(acc, e);
    if (out != nullptr) _mm256_storeu_ps(out + j, _mm256_mul_ps(kv, e));
  }
  float sum = hsum256(acc);
  for (; j < n; ++j) {
    const float e = expf(z[j] - shift);
    sum += e;
    if (out != nullptr) out[j] = scale * e;
  }
  return sum;
}

HETSGD_AVX2 inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HETSGD_AVX2 float softmax_avx2(const float* z, index_t n, const col_t* labels, index_t nl,
                               float scale, float* grad) {
  if (nl == 0) return empty_row(n, grad);
  __m256 mx = _mm256_set1_ps(-INFINITY);
  index_t j = 0;
  for (; j + 8 <= n; j += 8) mx = _mm256_max_ps(_mm256_loadu_ps(z + j), mx);
  float m = hmax256(mx);
  for (; j < n; ++j) m = z[j] > m ? z[j] : m;
  const float label_sum = label_term(z, labels, nl, m);
  const __m256 mv = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  float tail_sum = 0.0f;
  const index_t body = n & ~index_t{7};
  if (grad != nullptr) {
    for (j = 0; j < body; j += 8) {
      const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(z + j), mv));
      _mm256_storeu_ps(grad + j, e);
      acc = _mm256_add_ps(acc, e);
    }
    for (j = body; j < n; ++j) {
      const float e = expf(z[j] - m);
      grad[j] = e;
      tail_sum += e;
    }
    const float sum = hsum256(acc) + tail_sum;
    const float inv = scale / sum;
    const __m256 iv = _mm256_set1_ps(inv);
    for (j = 0; j < body; j += 8) {
      _mm256_storeu_ps(grad + j, _mm256_mul_ps(_mm256_loadu_ps(grad + j), iv));
    }
    for (j = body; j < n; ++j) grad[j] *= inv;
    subtract_targets(grad, labels, nl, scale);
    return logf(sum) - label_sum / static_cast<float>(nl);
  }
  for (j = 0; j < body; j += 8) {
    acc = _mm256_add_ps(acc, exp256(_mm256_sub_ps(_mm256_loadu_ps(z + j), mv)));
  }
  for (j = body; j < n; ++j) tail_sum += expf(z[j] - m);
  return logf(hsum256(acc) + tail_sum) - label_sum / static_cast<float>(nl);
}

__attribute__((target("avx2"), optimize("fp-contract=off"))) void adam_avx2(
    float* w, float* m, float* v, const float* g, index_t n, const math::AdamStep& s, float b1,
    float b2, float eps, float wd) {
  const __m256 wdv = _mm256_set1_ps(wd), b1v = _mm256_set1_ps(b1), b2v = _mm256_set1_ps(b2);
  const __m256 c1 = _mm256_set1_ps(1.0f - b1), c2 = _mm256_set1_ps(1.0f - b2);
  const __m256 lr = _mm256_set1_ps(s.lr_over_bc1), isb = _mm256_set1_ps(s.inv_sqrt_bc2);
  const __m256 ev = _mm256_set1_ps(eps);
  index_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 wi = _mm256_loadu_ps(w + i);
    const __m256 gd = _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_mul_ps(wdv, wi));
    const __m256 mi =
        _mm256_add_ps(_mm256_mul_ps(b1v, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gd));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2v, _mm256_loadu_ps(v + i)),
                                    _mm256_mul_ps(_mm256_mul_ps(c2, gd), gd));
    const __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vi), isb), ev);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(w + i, _mm256_sub_ps(wi, _mm256_div_ps(_mm256_mul_ps(lr, mi), den)));
  }
  for (; i < n; ++i) math::adam_update(w[i], m[i], v[i], g[i], s, b1, b2, eps, wd);
}

HETSGD_AVX2 void topk_avx2(const float* z, index_t n, int k, float* scores, col_t* ids) {
  if (k <= 0) return;
  int size = 0;
  index_t j = 0;
  while (j < n) {
    if (size == k && j + 8 <= n) {
      const __m256 gt =
          _mm256_cmp_ps(_mm256_loadu_ps(z + j), _mm256_set1_ps(scores[k - 1]), _CMP_GT_OQ);
      if (_mm256_movemask_ps(gt) == 0) {
        j += 8;
        continue;
      }
      const index_t stop = j + 8;
      for (; j < stop; ++j) math::topk_insert(scores, ids, k, size, z[j], static_cast<col_t>(j));
      continue;
    }
    math::topk_insert(scores, ids, k, size, z[j], static_cast<col_t>(j));
    ++j;
  }
  for (int r = size; r < k; ++r) {
    scores[r] = -INFINITY;
    ids[r] = -1;
  }
}

__attribute__((target("avx2"), optimize("fp-contract=off"))) void gather_avx2(
    const float* base, index_t width, const std::int32_t* idx, const float* vals, index_t count,
    const float* init, bool relu, float* out) {
  const __m256 zero = _mm256_setzero_ps();
  index_t c = 0;
  for (; c + 32 <= width; c += 32) {
    __m256 a0 = init ? _mm256_loadu_ps(init + c) : zero;
    __m256 a1 = init ? _mm256_loadu_ps(init + c + 8) : zero;
    __m256 a2 = init ? _mm256_loadu_ps(init + c + 16) : zero;
    __m256 a3 = init ? _mm256_loadu_ps(init + c + 24) : zero;
    for (index_t i = 0; i < count; ++i) {
      const __m256 v = _mm256_set1_ps(vals[i]);
      const float* r = base + static_cast<index_t>(idx[i]) * width + c;
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(v, _mm256_loadu_ps(r)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(v, _mm256_loadu_ps(r + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(v, _mm256_loadu_ps(r + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(v, _mm256_loadu_ps(r + 24)));
    }
    if (relu) {
      a0 = _mm256_max_ps(a0, zero);
      a1 = _mm256_max_ps(a1, zero);
      a2 = _mm256_max_ps(a2, zero);
      a3 = _mm256_max_ps(a3, zero);
    }
    _mm256_storeu_ps(out + c, a0);
    _mm256_storeu_ps(out + c + 8, a1);
    _mm256_storeu_ps(out + c + 16, a2);
    _mm256_storeu_ps(out + c + 24, a3);
  }
  if (c < width) {
    // Remaining columns (width not a multiple of 32): the scalar loop, same order.
    for (index_t j = c; j < width; ++j) out[j] = init != nullptr ? init[j] : 0.0f;
    for (index_t i = 0; i < count; ++i) {
      const float v = vals[i];
      const float* r = base + static_cast<index_t>(idx[i]) * width;
      for (index_t j = c; j < width; ++j) out[j] += v * r[j];
    }
    if (relu) relu_body(out + c, width - c);
  }
}

HETSGD_AVX2 void relu_avx2(float* x, index_t n) { relu_body(x, n); }
HETSGD_AVX2 std::int32_t dot_i8_avx2(const std::int8_t* a, const std::int8_t* b, index_t n) {
  return dot_i8_body(a, b, n);
}
HETSGD_AVX2 void add_to_avx2(float* dst, const float* src, index_t n) { add_to_body(dst, src, n); }
HETSGD_AVX2 void relu_mask_avx2(float* dx, const float* act, index_t n) {
  relu_mask_body(dx, act, n);
}

#endif  // HETSGD_VEC_X86

constexpr Kernels kBaseline{"baseline",     softmax_base, adam_base,   topk_base,      relu_base,
                            relu_mask_base, gather_base,  add_to_base, exp_shift_base, dot_i8_base};
#if HETSGD_VEC_X86
constexpr Kernels kAvx512{"avx512",         softmax_avx512,   adam_avx512,   topk_avx512,
                          relu_avx512,      relu_mask_avx512, gather_avx512, add_to_avx512,
                          exp_shift_avx512, dot_i8_avx512};
constexpr Kernels kAvx2{"avx2",         softmax_avx2, adam_avx2,   topk_avx2,      relu_avx2,
                        relu_mask_avx2, gather_avx2,  add_to_avx2, exp_shift_avx2, dot_i8_avx2};
#endif

/// Rank of an ISA name (baseline 0, avx2 1, avx512 2); -1 when unknown.
int isa_rank(const char* name) {
  const char* order[] = {"baseline", "avx2", "avx512"};
  for (int i = 0; i < 3; ++i) {
    if (name != nullptr && std::strcmp(name, order[i]) == 0) return i;
  }
  return -1;
}

/// The widest supported variant whose rank is <= `cap` (cap < 0: no limit).
const Kernels* widest(int cap) {
#if HETSGD_VEC_X86
  __builtin_cpu_init();
  if ((cap < 0 || cap >= 2) && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("fma")) {
    return &kAvx512;
  }
  if ((cap < 0 || cap >= 1) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return &kAvx2;
  }
#endif
  (void)cap;
  return &kBaseline;
}

std::atomic<const Kernels*> g_selected{nullptr};

const Kernels& kernels() {
  const Kernels* k = g_selected.load(std::memory_order_acquire);
  if (k == nullptr) {
    k = widest(isa_rank(std::getenv("HETSGD_CPU_ISA")));
    g_selected.store(k, std::memory_order_release);
  }
  return *k;
}

}  // namespace

const char* use_isa(const char* name) {
  const Kernels* k = widest(isa_rank(name));
  g_selected.store(k, std::memory_order_release);
  return k->name;
}

const char* isa_name() { return kernels().name; }

float softmax_ce_row(const float* z, index_t n, const col_t* labels, index_t num_labels,
                     float scale, float* grad) {
  return kernels().softmax_ce_row(z, n, labels, num_labels, scale, grad);
}

void adam_span(float* w, float* m, float* v, const float* g, index_t n, const math::AdamStep& s,
               float beta1, float beta2, float eps, float wd) {
  kernels().adam_span(w, m, v, g, n, s, beta1, beta2, eps, wd);
}

void topk_row(const float* z, index_t n, int k, float* scores, col_t* ids) {
  kernels().topk_row(z, n, k, scores, ids);
}

void relu(float* x, index_t n) { kernels().relu(x, n); }

float exp_shift(const float* z, index_t n, float shift, float scale, float* out) {
  return kernels().exp_shift(z, n, shift, scale, out);
}

void add_to(float* dst, const float* src, index_t n) { kernels().add_to(dst, src, n); }

std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, index_t n) {
  return kernels().dot_i8(a, b, n);
}

void relu_mask(float* dx, const float* act, index_t n) { kernels().relu_mask(dx, act, n); }

void gather_sum(const float* base, index_t width, const std::int32_t* idx, const float* vals,
                index_t count, const float* init, bool relu, float* out) {
  kernels().gather_sum(base, width, idx, vals, count, init, relu, out);
}

}  // namespace hetsgd::cpu::vec
