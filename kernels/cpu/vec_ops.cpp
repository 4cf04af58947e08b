#include "kernels/cpu/vec_ops.h"

#include <math.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/math/softmax_ce.h"
#include "core/math/topk.h"
#include "kernels/cpu/vec_ops_impl.h"

namespace hetsgd::cpu::vec {
namespace {

using detail::add_to_body;
using detail::dot_i8_body;
using detail::Kernels;
using detail::relu_body;
using detail::relu_mask_body;
#if HETSGD_VEC_X86
using detail::kAvx2;
using detail::kAvx512;
#endif

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
constexpr Kernels kBaseline{"baseline",     softmax_base, adam_base,   topk_base,      relu_base,
                            relu_mask_base, gather_base,  add_to_base, exp_shift_base, dot_i8_base};

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
