/// \file kernels/cuda/kernels.cuh
/// Launchers of the CUDA kernels behind CudaDevice (nvcc-only header).
///
/// Every launcher enqueues work on `stream` and returns without synchronising (except where a
/// result size must come back to the host, said below). Matrices are row-major; `rows` x `n`
/// element offsets are computed in 64 bits, so a logits matrix may exceed 2^31 elements.
/// Per-element formulas come from core/math/*.h, the same code the CPU backend runs.
/// These are also the entry points of the kernel tests in tests/cuda/.
#pragma once

#include <cuda_runtime.h>

#include "core/types.h"

namespace hetsgd::cuda::detail {

/// Largest k the top-k kernel supports (per-thread lists live in registers/local memory).
constexpr int kMaxTopK = 32;

/// z[r, :] += b (and ReLU when `relu`), for a `rows` x `n` row-major matrix.
void launch_add_bias(float* z, const float* b, index_t rows, index_t n, bool relu,
                     cudaStream_t stream);

/// d[i] = act[i] > 0 ? d[i] : 0 for `count` elements (ReLU backward through its output).
void launch_relu_backward(float* d, const float* act, index_t count, cudaStream_t stream);

/// acc[i] = (accumulate ? acc[i] : 0) + w * x[i] for `count` elements.
void launch_weighted_sum(float* acc, const float* x, float w, bool accumulate, index_t count,
                         cudaStream_t stream);

/// Fused softmax cross-entropy over each row of `z` (`rows` x `n`): row_loss[r] gets the row's
/// loss (core/math/softmax_ce.h); when `with_grad`, z is overwritten by `scale` * dloss/dz.
/// Labels are CSR with 32-bit offsets `y_indptr` (rows + 1, starting at 0) into `y_idx`.
/// One block per row; labels are read before any logit is overwritten.
void launch_softmax_ce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                       float scale, bool with_grad, float* row_loss, cudaStream_t stream);

/// One-vs-all sigmoid BCE (core/math/sigmoid_bce.h): row_loss[r] = mean over the n labels of
/// the row's element losses; when `with_grad`, z is overwritten by `scale` * dloss_elem/dz
/// (the caller folds 1/(rows*n) into `scale`). Label ids of a row must be distinct.
void launch_bce(float* z, index_t rows, index_t n, const int* y_indptr, const col_t* y_idx,
                float scale, bool with_grad, float* row_loss, cudaStream_t stream);

/// Per-row top-k of `z` (`rows` x `n`) into `scores`/`ids` (rows x k), best first, ties to the
/// smaller id, NaN never selected, short rows padded with (-inf, -1): core/math/topk.h order.
/// Requires 1 <= k <= kMaxTopK. One block of 128 threads per row: thread-local lists, then a
/// tree merge in shared memory (128 * k * 8 bytes).
void launch_topk(const float* z, index_t rows, index_t n, int k, float* scores, col_t* ids,
                 cudaStream_t stream);

/// Sorted distinct feature ids of a batch: writes them to `uniq` (capacity >= nnz) and, for
/// every nonzero e, compact[e] = position of cols[e] in `uniq`. Returns their number U.
/// Synchronises `stream` (U must reach the host to size the next launches).
index_t compact_features(const col_t* cols, index_t nnz, col_t* uniq, col_t* compact,
                         cudaStream_t stream);

/// Row-sparse first-layer gradient: g[compact[e], :] += scale * val[e] * dh[row[e], :] for every
/// nonzero e, with `g` the U x h compact gradient (zeroed by the caller). Atomics: the
/// summation order of features shared by several rows is not deterministic (float rounding
/// differs run to run at the 1e-7 relative level). nnz * h must fit in 63 bits.
void launch_scatter_rows(const int* row_of, const col_t* compact, const float* val, index_t nnz,
                         const float* dh, index_t h, float scale, float* g, cudaStream_t stream);

/// dense[rows[r], :] = compact[r, :] for r < count (rows distinct), width h.
void launch_expand_rows(float* dense, const float* compact, const col_t* rows, index_t count,
                        index_t h, cudaStream_t stream);

/// Ids of the rows of a `d` x `h` matrix that hold any nonzero, ascending, into `out`
/// (capacity d); returns their number. Synchronises `stream`.
index_t nonzero_rows(const float* g, index_t d, index_t h, col_t* out, cudaStream_t stream);

/// Optimiser hyper-parameters for one update launch.
struct UpdateArgs {
  bool adam = true;
  float lr = 0.0f;
  float momentum = 0.0f;  ///< SGD heavy-ball (0 = plain SGD, velocity untouched)
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;  ///< 0 for biases
  long long step = 1;         ///< Adam step t >= 1 (this update included)
};

/// Dense update of `count` parameters: w, its gradient g, state s1 (SGD velocity / Adam m)
/// and s2 (Adam v; unused for SGD).
void launch_update_dense(float* w, const float* g, float* s1, float* s2, index_t count,
                         const UpdateArgs& args, cudaStream_t stream);

/// Lazy update of the rows `rows[0..count)` of a width-`h` matrix: parameter row rows[r];
/// gradient row r of `g` when `g_compact`, else row rows[r] of the dense `g`.
void launch_update_rows(float* w, const float* g, bool g_compact, float* s1, float* s2,
                        const col_t* rows, index_t count, index_t h, const UpdateArgs& args,
                        cudaStream_t stream);

}  // namespace hetsgd::cuda::detail
