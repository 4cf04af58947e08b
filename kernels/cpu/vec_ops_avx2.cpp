// The AVX2 + FMA variants of kernels/cpu/vec_ops.h and their table.
#include "kernels/cpu/vec_ops_impl.h"

#if HETSGD_VEC_X86

#include <math.h>

#include "core/math/softmax_ce.h"
#include "core/math/topk.h"

namespace hetsgd::cpu::vec::detail {
namespace {

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

}  // namespace

extern constexpr Kernels kAvx2{"avx2",         softmax_avx2,   adam_avx2,   topk_avx2,
                               relu_avx2,      relu_mask_avx2, gather_avx2, add_to_avx2,
                               exp_shift_avx2, dot_i8_avx2};

}  // namespace hetsgd::cpu::vec::detail

#endif  // HETSGD_VEC_X86
