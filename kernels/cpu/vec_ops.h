/// \file kernels/cpu/vec_ops.h
/// SIMD versions of the CPU backend's per-element hot loops, picked at run time.
///
/// The library is built for baseline x86-64 (it must run on any CI machine), so these loops
/// are compiled three times inside vec_ops.cpp: for AVX-512 (F/VL/DQ/BW), for AVX2 + FMA, and
/// for the baseline. The first call selects the widest variant the CPU supports
/// (__builtin_cpu_supports) and every later call goes through that one function pointer. On
/// other architectures only the baseline variant exists.
///
/// Each function has the same contract as the core/math formula it replaces:
/// - softmax_ce_row(): vectorised exp (polynomial, about 2 ulp against expf) and lane-parallel
///   sums, so the loss and gradient agree with math::softmax_ce_row() to float rounding, not
///   bit for bit. The result does not depend on the thread count (one row, one call).
/// - adam_span() performs exactly the operations of math::adam_update() in the same order
///   without fused multiply-adds, so its result is bit-identical to the scalar rule.
/// - topk_row() returns exactly math::topk_row()'s list; it only skips, 16 or 8 at a time,
///   scores that cannot enter the full list.
#pragma once

#include <cstdint>

#include "core/math/optimizer_update.h"
#include "core/types.h"

namespace hetsgd::cpu::vec {

/// The kernels run the widest instruction set the CPU supports ("avx512", "avx2" or
/// "baseline"); the environment variable HETSGD_CPU_ISA (read on first use) caps it, e.g.
/// HETSGD_CPU_ISA=baseline to measure the scalar code.
///
/// Switches every later call to the widest supported variant not wider than `name`
/// ("baseline", "avx2", "avx512"; unknown or null = no cap) and returns the one chosen. For
/// tests and benchmarks that compare the variants; not to be called while other threads
/// run these kernels.
const char* use_isa(const char* name);

/// Fused softmax cross-entropy of one row; same contract as math::softmax_ce_row() (loss of
/// `z[0..n)` against `labels[0..num_labels)`, and `scale * dloss/dz` into `grad` when not null;
/// `grad` may alias `z`).
float softmax_ce_row(const float* z, index_t n, const col_t* labels, index_t num_labels,
                     float scale, float* grad);

/// Adam (math::adam_update()) on `n` consecutive parameters `w` with moments `m`, `v` and
/// gradient `g`, weight decay `wd`; bit-identical to the scalar rule.
void adam_span(float* w, float* m, float* v, const float* g, index_t n, const math::AdamStep& s,
               float beta1, float beta2, float eps, float wd);

/// Top-`k` of `z[0..n)`, best first; same result as math::topk_row().
void topk_row(const float* z, index_t n, int k, float* scores, col_t* ids);

/// Weighted sum of selected rows: out[j] = init[j] + sum_i vals[i] * base[idx[i] * width + j]
/// for j < `width`, accumulated in i order with a separate multiply and add (no FMA), so every
/// variant gives the scalar loop's bits. `init` null means 0; `relu` clamps the result at 0.
/// The sparse first layer's forward gather (rows of W0) and its dW0 (rows of dH) are this.
void gather_sum(const float* base, index_t width, const std::int32_t* idx, const float* vals,
                index_t count, const float* init, bool relu, float* out);

/// Streaming log-sum-exp piece: returns sum_j exp(z_j - shift) over `z[0..n)` and, when `out`
/// is not null, writes out[j] = scale * exp(z_j - shift) (`out` may alias `z`). Same
/// vectorised exp as softmax_ce_row() (about 2 ulp against expf).
float exp_shift(const float* z, index_t n, float shift, float scale, float* out);

/// x[i] = max(x[i], 0) for `n` values.
void relu(float* x, index_t n);

/// dst[i] += src[i] for `n` values (element-wise, so every ISA gives the same bits); the
/// dense layers' bias gradients sum rows of dY with it.
void add_to(float* dst, const float* src, index_t n);

/// sum_i a[i] * b[i] over `n` int8 pairs, in int32 (exact, so every ISA gives the same value);
/// the label index's quantised inner products.
std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, index_t n);

/// dx[i] = 0 where act[i] <= 0 (the ReLU mask of the layer below), for `n` values.
void relu_mask(float* dx, const float* act, index_t n);

}  // namespace hetsgd::cpu::vec
