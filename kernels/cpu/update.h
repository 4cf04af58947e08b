/// \file kernels/cpu/update.h
/// Optimiser updates on the host (SGD, momentum, Adam from core/math/optimizer_update.h):
/// row-sparse updates of listed rows with lazy state, and dense updates of a parameter range.
///
/// State pointers (s1: momentum velocity or Adam first moment; s2: Adam second moment) point
/// at buffers shaped like the parameters and may be null when the optimiser does not use them.
/// Must be called inside the device's task_arena; results do not depend on the thread count.
#pragma once

#include <cstdint>

#include "core/math/optimizer_update.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/types.h"

namespace hetsgd::cpu {

/// The per-step constants of one optimiser step.
struct StepRule {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = 0.0f;
  float momentum = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  math::AdamStep adam{};
};

/// The rule of optimiser step `step` (>= 1, counting this one) at learning rate `lr`.
StepRule make_step_rule(const OptimizerConfig& opt, float lr, std::int64_t step);

/// Applies the rule to `n` consecutive parameters `w` with gradient `g` and weight decay `wd`.
void update_span(const StepRule& s, float* w, float* s1, float* s2, const float* g, index_t n,
                 float wd);

/// Updates rows `rows[0..n)` of a row-major matrix of `width` columns at `w` (state at s1/s2,
/// same offsets). The gradient of row i is at `g + (compact ? i : rows[i]) * width`. Rows not
/// listed keep their parameters and state (lazy).
void update_rows(const StepRule& s, const col_t* rows, index_t n, index_t width, float* w,
                 float* s1, float* s2, const float* g, bool compact, float wd);

/// Updates parameters [begin, end) of the contiguous buffer `w` from `g` (all same offsets),
/// with weight decay `wd` on weight spans and none on biases.
void update_dense(const StepRule& s, const ParamLayout& layout, index_t begin, index_t end,
                  float* w, float* s1, float* s2, const float* g, float wd);

}  // namespace hetsgd::cpu
