/// \file kernels/cuda/topk.cuh
/// Per-row top-k of a logits matrix or of one label chunk merged into a running list, on one
/// GPU. Twin of kernels/cpu/topk.cpp (nvcc-only header).
#pragma once

#include <cuda_runtime.h>

#include "core/types.h"

namespace hetsgd::cuda::detail {

/// Largest k the top-k kernel supports (per-thread lists live in registers/local memory).
constexpr int kMaxTopK = 32;

/// Per-row top-k of `z` (`rows` x `n`) into `scores`/`ids` (rows x k), best first, ties to the
/// smaller id, NaN never selected, short rows padded with (-inf, -1): core/math/topk.h order.
/// Requires 1 <= k <= kMaxTopK. One block of 128 threads per row: thread-local lists, then a
/// tree merge in shared memory (128 * k * 8 bytes).
void launch_topk(const float* z, index_t rows, index_t n, int k, float* scores, col_t* ids,
                 cudaStream_t stream);

/// Running top-k over label chunks: `z` holds the logits of labels [c0, c0 + n) of every row
/// (`rows` x n); the chunk's best k are merged into `scores`/`ids` (rows x k), which hold the
/// best of the earlier chunks unless `first`. The order is total (score desc, id asc), so the
/// result after the last chunk equals launch_topk on the whole row.
void launch_topk_chunk(const float* z, index_t rows, index_t n, index_t c0, int k, bool first,
                       float* scores, col_t* ids, cudaStream_t stream);

}  // namespace hetsgd::cuda::detail
