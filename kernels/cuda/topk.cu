// Per-row top-k: thread-local insertion lists (core/math/topk.h), merged by a shared-memory tree.
#include "kernels/cuda/topk.cuh"

#include "core/error.h"
#include "core/math/topk.h"
#include "kernels/cuda/check.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kTopkThreads = 128;

// Each thread scans a strided slice of the row into its own sorted list (most candidates are
// rejected in O(1) once the list is full). The lists are then merged pairwise, halving the
// active threads each step; the order (score desc, id asc) is total, so the result does not
// depend on how the row was split and equals the CPU's serial scan. With `merge`, the row's
// running list from earlier chunks (ids < c0) is inserted last; the same total order makes
// the union's top-k independent of the chunking.
__global__ void topk_kernel(const float* z, index_t n, index_t c0, int k, bool merge, float* scores,
                            col_t* ids) {
  extern __shared__ unsigned char smem[];
  float* s_scores = reinterpret_cast<float*>(smem);
  col_t* s_ids = reinterpret_cast<col_t*>(s_scores + kTopkThreads * k);
  __shared__ int s_size[kTopkThreads];
  const index_t r = blockIdx.x;
  const float* zr = z + r * n;
  const int t = threadIdx.x;

  float my_scores[kMaxTopK];
  col_t my_ids[kMaxTopK];
  int size = 0;
  for (index_t j = t; j < n; j += kTopkThreads) {
    math::topk_insert(my_scores, my_ids, k, size, zr[j], static_cast<col_t>(c0 + j));
  }
  for (int i = 0; i < size; ++i) {
    s_scores[t * k + i] = my_scores[i];
    s_ids[t * k + i] = my_ids[i];
  }
  s_size[t] = size;
  __syncthreads();
  for (int stride = kTopkThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      const int other = t + stride;
      for (int i = 0; i < s_size[other]; ++i) {
        if (!math::topk_insert(my_scores, my_ids, k, size, s_scores[other * k + i],
                               s_ids[other * k + i])) {
          break;  // the other list is sorted: once one is rejected, the rest are too
        }
      }
    }
    __syncthreads();
    if (t < stride) {
      for (int i = 0; i < size; ++i) {
        s_scores[t * k + i] = my_scores[i];
        s_ids[t * k + i] = my_ids[i];
      }
      s_size[t] = size;
    }
    __syncthreads();
  }
  if (t == 0) {
    if (merge) {
      for (int i = 0; i < k; ++i) {
        const col_t id = ids[r * k + i];
        if (id < 0) break;  // padding: the running list is shorter than k
        if (!math::topk_insert(my_scores, my_ids, k, size, scores[r * k + i], id)) break;
      }
    }
    for (int i = 0; i < k; ++i) {
      scores[r * k + i] = i < size ? my_scores[i] : -INFINITY;
      ids[r * k + i] = i < size ? my_ids[i] : -1;
    }
  }
}

}  // namespace

void launch_topk_chunk(const float* z, index_t rows, index_t n, index_t c0, int k, bool first,
                       float* scores, col_t* ids, cudaStream_t stream) {
  HETSGD_CHECK(k >= 1 && k <= kMaxTopK,
               "top-k: k " << k << " outside [1, " << kMaxTopK << "] on CUDA");
  if (rows == 0) return;
  const size_t shmem = static_cast<size_t>(kTopkThreads) * k * (sizeof(float) + sizeof(col_t));
  topk_kernel<<<static_cast<unsigned>(rows), kTopkThreads, shmem, stream>>>(z, n, c0, k, !first,
                                                                            scores, ids);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_topk(const float* z, index_t rows, index_t n, int k, float* scores, col_t* ids,
                 cudaStream_t stream) {
  launch_topk_chunk(z, rows, n, 0, k, true, scores, ids, stream);
}

}  // namespace hetsgd::cuda::detail
