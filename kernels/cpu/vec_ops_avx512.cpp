// The AVX-512 (F/VL/DQ/BW + FMA) variants of kernels/cpu/vec_ops.h and their table.
#include "kernels/cpu/vec_ops_impl.h"

#if HETSGD_VEC_X86

#include <math.h>

#include "core/math/softmax_ce.h"
#include "core/math/topk.h"

namespace hetsgd::cpu::vec::detail {
namespace {

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

}  // namespace

extern constexpr Kernels kAvx512{"avx512",         softmax_avx512,   adam_avx512,   topk_avx512,
                                 relu_avx512,      relu_mask_avx512, gather_avx512, add_to_avx512,
                                 exp_shift_avx512, dot_i8_avx512};

}  // namespace hetsgd::cpu::vec::detail

#endif  // HETSGD_VEC_X86
