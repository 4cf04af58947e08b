#include "kernels/cpu/topk.h"

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowBlock = 16;
}  // namespace

void topk_rows(const float* z, index_t rows, index_t num_labels, int k, col_t* labels,
               float* scores) {
  for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      vec::topk_row(z + r * num_labels, num_labels, k, scores + r * k, labels + r * k);
    }
  });
}

}  // namespace hetsgd::cpu
