#include "kernels/cpu/dropout.h"

#include "core/math/dropout.h"
#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowsPerTask = 32;
}  // namespace

void dropout_forward(float* h, index_t rows, index_t width, float p, std::uint64_t stream) {
  const std::uint32_t threshold = math::dropout_threshold(p);
  const float keep_scale = 1.0f / (1.0f - p);
  // Fixed row blocks, and a mask bit indexed by the element's position in the batch: the result
  // does not depend on which thread runs which block.
  for_blocks(rows, kRowsPerTask, [&](index_t r0, index_t r1) {
    for (index_t i = r0 * width; i < r1 * width; ++i) {
      h[i] =
          math::dropout_apply(h[i], stream, static_cast<std::uint64_t>(i), threshold, keep_scale);
    }
  });
}

void dropout_backward(float* d, index_t rows, index_t width, float p) {
  const float keep_scale = 1.0f / (1.0f - p);
  for_blocks(rows, kRowsPerTask, [&](index_t r0, index_t r1) {
    for (index_t i = r0 * width; i < r1 * width; ++i) d[i] *= keep_scale;
  });
}

}  // namespace hetsgd::cpu
