// The row-sparse first layer: distinct batch features (Thrust), gradient scatter, row expansion.
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sort.h>
#include <thrust/unique.h>

#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/kernels.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(index_t count) {
  const index_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<index_t>(std::max<index_t>(blocks, 1), 65535 * 8));
}

// One thread per (nonzero, hidden unit): consecutive threads share a nonzero and walk one row
// of dh and one row of g, so reads and atomics are coalesced. Atomics are needed because
// several batch rows may share a feature.
__global__ void scatter_rows_kernel(const int* row_of, const col_t* compact, const float* val,
                                    index_t nnz, const float* dh, index_t h, float scale,
                                    float* g) {
  const index_t total = nnz * h;
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t e = i / h;
    const index_t j = i - e * h;
    const float v = scale * val[e] * dh[static_cast<index_t>(row_of[e]) * h + j];
    atomicAdd(&g[static_cast<index_t>(compact[e]) * h + j], v);
  }
}

__global__ void expand_rows_kernel(float* dense, const float* compact, const col_t* rows,
                                   index_t count, index_t h) {
  const index_t total = count * h;
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t r = i / h;
    dense[static_cast<index_t>(rows[r]) * h + (i - r * h)] = compact[i];
  }
}

// One warp per row: any nonzero element flags the row.
__global__ void row_flags_kernel(const float* g, index_t d, index_t h, unsigned char* flags) {
  const index_t warp = (blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= d) return;
  bool any = false;
  for (index_t j = lane; j < h; j += 32) any = any || g[warp * h + j] != 0.0f;
  any = __any_sync(0xffffffffu, any);
  if (lane == 0) flags[warp] = any ? 1 : 0;
}

struct IsFlagged {
  const unsigned char* flags;
  __host__ __device__ bool operator()(col_t i) const { return flags[i] != 0; }
};

}  // namespace

index_t compact_features(const col_t* cols, index_t nnz, col_t* uniq, col_t* compact,
                         cudaStream_t stream) {
  if (nnz == 0) return 0;
  auto policy = thrust::cuda::par.on(stream);
  HETSGD_CUDA_CHECK(
      cudaMemcpyAsync(uniq, cols, nnz * sizeof(col_t), cudaMemcpyDeviceToDevice, stream));
  thrust::sort(policy, uniq, uniq + nnz);
  const index_t u = thrust::unique(policy, uniq, uniq + nnz) - uniq;  // synchronises
  thrust::lower_bound(policy, uniq, uniq + u, cols, cols + nnz, compact);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
  return u;
}

void launch_scatter_rows(const int* row_of, const col_t* compact, const float* val, index_t nnz,
                         const float* dh, index_t h, float scale, float* g, cudaStream_t stream) {
  if (nnz == 0 || h == 0) return;
  scatter_rows_kernel<<<grid_for(nnz * h), kThreads, 0, stream>>>(row_of, compact, val, nnz, dh, h,
                                                                  scale, g);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_expand_rows(float* dense, const float* compact, const col_t* rows, index_t count,
                        index_t h, cudaStream_t stream) {
  if (count == 0 || h == 0) return;
  expand_rows_kernel<<<grid_for(count * h), kThreads, 0, stream>>>(dense, compact, rows, count, h);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

index_t nonzero_rows(const float* g, index_t d, index_t h, col_t* out, cudaStream_t stream) {
  if (d == 0) return 0;
  DeviceBuffer<unsigned char> flags(static_cast<size_t>(d));
  const index_t threads = d * 32;
  row_flags_kernel<<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0,
                     stream>>>(g, d, h, flags.data());
  HETSGD_CUDA_CHECK_LAUNCH(stream);
  auto policy = thrust::cuda::par.on(stream);
  col_t* end = thrust::copy_if(policy, thrust::counting_iterator<col_t>(0),
                               thrust::counting_iterator<col_t>(static_cast<col_t>(d)), out,
                               IsFlagged{flags.data()});
  HETSGD_CUDA_CHECK(cudaStreamSynchronize(stream));  // flags is freed on return
  return end - out;
}

}  // namespace hetsgd::cuda::detail
