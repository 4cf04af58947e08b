#include "kernels/cpu/update.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kUpdateBlock = 16384;  // dense parameters per optimiser task
constexpr index_t kRowsPerTask = 64;     // sparse rows per optimiser task
constexpr index_t kRowPrefetch = 2;      // rows ahead whose lines a row-sparse update prefetches
}  // namespace

StepRule make_step_rule(const OptimizerConfig& opt, float lr, std::int64_t step) {
  StepRule s{opt.kind, lr, opt.momentum, opt.beta1, opt.beta2, opt.eps, {}};
  if (opt.kind == OptimizerKind::kAdam) s.adam = math::adam_step(lr, opt.beta1, opt.beta2, step);
  return s;
}

void update_span(const StepRule& s, float* w, float* s1, float* s2, const float* g, index_t n,
                 float wd) {
  if (s.kind == OptimizerKind::kAdam) {
    vec::adam_span(w, s1, s2, g, n, s.adam, s.beta1, s.beta2, s.eps, wd);
  } else if (s.momentum != 0.0f) {
    for (index_t i = 0; i < n; ++i) math::momentum_update(w[i], s1[i], g[i], s.lr, s.momentum, wd);
  } else {
    for (index_t i = 0; i < n; ++i) math::sgd_update(w[i], g[i], s.lr, wd);
  }
}

void update_rows(const StepRule& s, const col_t* rows, index_t n, index_t width, float* w,
                 float* s1, float* s2, const float* g, bool compact, float wd) {
  for_blocks(n, kRowsPerTask, [&](index_t i0, index_t i1) {
    for (index_t i = i0; i < i1; ++i) {
      // Scattered rows: fetch a later row's weights and moments while this one is updated.
      if (i + kRowPrefetch < i1) {
        const index_t ahead = static_cast<index_t>(rows[i + kRowPrefetch]) * width;
        for (index_t k = 0; k < width; k += 16) {
          __builtin_prefetch(w + ahead + k, 1, 0);
          if (s1 != nullptr) __builtin_prefetch(s1 + ahead + k, 1, 0);
          if (s2 != nullptr) __builtin_prefetch(s2 + ahead + k, 1, 0);
        }
      }
      const index_t off = static_cast<index_t>(rows[i]) * width;
      const float* gr = g + (compact ? i : static_cast<index_t>(rows[i])) * width;
      update_span(s, w + off, s1 ? s1 + off : nullptr, s2 ? s2 + off : nullptr, gr, width, wd);
    }
  });
}

void update_dense(const StepRule& s, const ParamLayout& layout, index_t begin, index_t end,
                  float* w, float* s1, float* s2, const float* g, float wd) {
  const std::vector<LayerSlice>& ls = layout.layers();
  for_blocks(end - begin, kUpdateBlock, [&](index_t a, index_t b) {
    index_t k = begin + a;
    const index_t stop = begin + b;
    while (k < stop) {
      // Split the block at layer boundaries so each span has one weight-decay value.
      index_t span_end = stop;
      float span_wd = 0.0f;
      for (const LayerSlice& sl : ls) {
        if (k >= sl.w_offset && k < sl.b_offset) {
          span_end = std::min(stop, sl.b_offset);
          span_wd = wd;
          break;
        }
        if (k >= sl.b_offset && k < sl.b_offset + sl.out) {
          span_end = std::min(stop, sl.b_offset + sl.out);
          break;
        }
      }
      update_span(s, w + k, s1 ? s1 + k : nullptr, s2 ? s2 + k : nullptr, g + k, span_end - k,
                  span_wd);
      k = span_end;
    }
  });
}

}  // namespace hetsgd::cpu
