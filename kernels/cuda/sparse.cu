// The row-sparse first layer: SpMM, distinct batch features (CUB), gradient scatter, row lists.
#include "kernels/cuda/sparse.cuh"

#include <thrust/iterator/counting_iterator.h>

#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "core/error.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/launch.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

// Owns the cuSPARSE descriptors of one SpMM call.
struct SpmmDescriptors {
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnMatDescr_t b = nullptr, c = nullptr;
  ~SpmmDescriptors() {
    if (a != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroySpMat(a));
    if (b != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroyDnMat(b));
    if (c != nullptr) HETSGD_CUSPARSE_CHECK_NOTHROW(cusparseDestroyDnMat(c));
  }
};

// The scatter without atomics, so a step is deterministic run to run (`--deterministic`):
// the nonzeros are stably sorted by their compact row (seg_order), each distinct row u owns
// the segment [seg_start[u], seg_start[u + 1]), and one thread per (row, hidden unit) sums its
// segment in nonzero order with separately rounded multiplies and adds (no FMA contraction),
// which is exactly the serial loop `g[compact[e]] += scale * val[e] * dh[row[e]]` over e.
__global__ void iota_kernel(int* out, index_t n) {
  for (index_t i = grid_start(); i < n; i += grid_stride()) out[i] = static_cast<int>(i);
}

// seg_start[u] = lower_bound(sorted keys, u) for u in [0, U]; seg_start[U] = nnz.
__global__ void segment_starts_kernel(const col_t* keys, index_t nnz, const int* count,
                                      int* seg_start) {
  const index_t u_count = *count;
  for (index_t u = grid_start(); u <= u_count; u += grid_stride()) {
    index_t lo = 0, hi = nnz;
    while (lo < hi) {
      const index_t mid = lo + (hi - lo) / 2;
      if (keys[mid] < u) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    seg_start[u] = static_cast<int>(lo);
  }
}

// Launched for the capacity (nnz rows); rows past the device-side count U are skipped.
__global__ void segment_sum_kernel(const int* seg_start, const int* order, const int* count,
                                   const int* row_of, const float* val, index_t capacity,
                                   const float* dh, index_t h, float scale, float* g) {
  const index_t total = static_cast<index_t>(*count) * h;
  for (index_t i = grid_start(); i < total && i < capacity * h; i += grid_stride()) {
    const index_t u = i / h;
    const index_t j = i - u * h;
    float sum = 0.0f;
    for (int p = seg_start[u]; p < seg_start[u + 1]; ++p) {
      const int e = order[p];
      const float t =
          __fmul_rn(__fmul_rn(scale, val[e]), dh[static_cast<index_t>(row_of[e]) * h + j]);
      sum = __fadd_rn(sum, t);
    }
    g[i] = sum;
  }
}

// The count lives on the device: launched for the capacity, each thread reads how many rows
// are real (one broadcast load per thread, cached).
__global__ void expand_rows_kernel(float* dense, const float* compact, const col_t* rows,
                                   const int* count, index_t h) {
  const index_t total = static_cast<index_t>(*count) * h;
  for (index_t i = grid_start(); i < total; i += grid_stride()) {
    const index_t r = i / h;
    dense[static_cast<index_t>(rows[r]) * h + (i - r * h)] = compact[i];
  }
}

// compact[e] = lower_bound(uniq, cols[e]): a binary search over the U sorted distinct ids
// (U <= nnz, so log2(nnz) steps per nonzero).
__global__ void positions_kernel(const col_t* cols, index_t nnz, const col_t* uniq,
                                 const int* count, col_t* compact) {
  const int u = *count;
  for (index_t e = grid_start(); e < nnz; e += grid_stride()) {
    const col_t v = cols[e];
    int lo = 0, hi = u;
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (uniq[mid] < v) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    compact[e] = lo;
  }
}

// One warp per row: any nonzero element flags the row.
__global__ void row_flags_kernel(const float* g, index_t d, index_t h, unsigned char* flags) {
  const index_t warp = grid_start() / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= d) return;
  bool any = false;
  for (index_t j = lane; j < h; j += 32) any = any || g[warp * h + j] != 0.0f;
  any = __any_sync(0xffffffffu, any);
  if (lane == 0) flags[warp] = any ? 1 : 0;
}

// Radix sort only the bits an id can use.
int key_bits(index_t num_features) {
  int bits = 1;
  while (bits < 31 && (static_cast<index_t>(1) << bits) < num_features) ++bits;
  return bits;
}

}  // namespace

void sparse_forward(cusparseHandle_t handle, index_t rows, index_t d, index_t nnz,
                    const int* indptr, const col_t* cols, const float* vals, const float* w,
                    index_t h, float* out, SparseScratch& scratch, cudaStream_t stream) {
  if (nnz == 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(out, 0, rows * h * sizeof(float), stream));
    return;
  }
  SpmmDescriptors desc;
  HETSGD_CUSPARSE_CHECK(cusparseCreateCsr(&desc.a, rows, d, nnz, const_cast<int*>(indptr),
                                          const_cast<col_t*>(cols), const_cast<float*>(vals),
                                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  HETSGD_CUSPARSE_CHECK(
      cusparseCreateDnMat(&desc.b, d, h, h, const_cast<float*>(w), CUDA_R_32F, CUSPARSE_ORDER_ROW));
  HETSGD_CUSPARSE_CHECK(
      cusparseCreateDnMat(&desc.c, rows, h, h, out, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  size_t bytes = 0;
  // CSR_ALG2 (row-major operands, deterministic) first; should a cuSPARSE version refuse it
  // for this shape, fall back once to the default algorithm and keep using that.
  cusparseStatus_t st = cusparseSpMM_bufferSize(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, desc.a,
      desc.b, &kZero, desc.c, CUDA_R_32F, scratch.spmm_alg, &bytes);
  if (st != CUSPARSE_STATUS_SUCCESS && scratch.spmm_alg != CUSPARSE_SPMM_ALG_DEFAULT) {
    scratch.spmm_alg = CUSPARSE_SPMM_ALG_DEFAULT;
    st = cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, desc.a, desc.b, &kZero,
                                 desc.c, CUDA_R_32F, scratch.spmm_alg, &bytes);
  }
  HETSGD_CUSPARSE_CHECK(st);
  // Stream-ordered growth: the previous SpMM on this stream finishes before the old block goes.
  scratch.spmm.reserve(std::max<size_t>(bytes, 1), stream);
  HETSGD_CUSPARSE_CHECK(cusparseSpMM(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, desc.a,
      desc.b, &kZero, desc.c, CUDA_R_32F, scratch.spmm_alg, scratch.spmm.data()));
}

void compact_features(const col_t* cols, index_t nnz, index_t num_features, col_t* uniq,
                      col_t* compact, int* count, SparseScratch& scratch, cudaStream_t stream) {
  if (nnz == 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int), stream));
    return;
  }
  HETSGD_CHECK(nnz < INT_MAX, "compact_features: nnz " << nnz << " >= INT_MAX");
  const int n = static_cast<int>(nnz);
  const int bits = key_bits(num_features);
  size_t sort_bytes = 0, unique_bytes = 0;
  HETSGD_CUDA_CHECK(
      cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, cols, uniq, n, 0, bits, stream));
  HETSGD_CUDA_CHECK(cub::DeviceSelect::Unique(nullptr, unique_bytes, uniq, uniq, count, n, stream));
  scratch.cub_temp.reserve(std::max<size_t>({sort_bytes, unique_bytes, 1}), stream);
  scratch.sorted.reserve(static_cast<size_t>(nnz), stream);
  size_t bytes = scratch.cub_temp.size();
  HETSGD_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(scratch.cub_temp.data(), bytes, cols,
                                                   scratch.sorted.data(), n, 0, bits, stream));
  bytes = scratch.cub_temp.size();
  HETSGD_CUDA_CHECK(cub::DeviceSelect::Unique(scratch.cub_temp.data(), bytes, scratch.sorted.data(),
                                              uniq, count, n, stream));
  positions_kernel<<<grid_for(nnz), kThreads, 0, stream>>>(cols, nnz, uniq, count, compact);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_scatter_rows(const int* row_of, const col_t* compact, const int* count,
                         const float* val, index_t nnz, const float* dh, index_t h, float scale,
                         float* g, SparseScratch& scratch, cudaStream_t stream) {
  if (nnz == 0 || h == 0) return;
  HETSGD_CHECK(nnz < INT_MAX, "launch_scatter_rows: nnz " << nnz << " >= INT_MAX");
  const int n = static_cast<int>(nnz);
  const int bits = key_bits(nnz);  // compact rows are < U <= nnz
  const size_t cap = static_cast<size_t>(nnz);
  scratch.seg_keys.reserve(cap, stream);
  scratch.seg_iota.reserve(cap, stream);
  scratch.seg_order.reserve(cap, stream);
  scratch.seg_start.reserve(cap + 1, stream);
  iota_kernel<<<grid_for(nnz), kThreads, 0, stream>>>(scratch.seg_iota.data(), nnz);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
  size_t bytes = 0;
  HETSGD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, compact, scratch.seg_keys.data(), scratch.seg_iota.data(),
      scratch.seg_order.data(), n, 0, bits, stream));
  scratch.cub_temp.reserve(std::max<size_t>(bytes, 1), stream);
  bytes = scratch.cub_temp.size();
  // LSD radix sort is stable: equal rows keep the nonzeros' order.
  HETSGD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      scratch.cub_temp.data(), bytes, compact, scratch.seg_keys.data(), scratch.seg_iota.data(),
      scratch.seg_order.data(), n, 0, bits, stream));
  segment_starts_kernel<<<grid_for(nnz + 1), kThreads, 0, stream>>>(
      scratch.seg_keys.data(), nnz, count, scratch.seg_start.data());
  HETSGD_CUDA_CHECK_LAUNCH(stream);
  segment_sum_kernel<<<grid_for(nnz * h), kThreads, 0, stream>>>(
      scratch.seg_start.data(), scratch.seg_order.data(), count, row_of, val, nnz, dh, h, scale, g);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_expand_rows(float* dense, const float* compact, const col_t* rows, const int* count,
                        index_t capacity, index_t h, cudaStream_t stream) {
  if (capacity == 0 || h == 0) return;
  expand_rows_kernel<<<grid_for(capacity * h), kThreads, 0, stream>>>(dense, compact, rows, count,
                                                                      h);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void nonzero_rows(const float* g, index_t d, index_t h, col_t* out, int* count,
                  SparseScratch& scratch, cudaStream_t stream) {
  if (d == 0) {
    HETSGD_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(int), stream));
    return;
  }
  HETSGD_CHECK(d < INT_MAX, "nonzero_rows: " << d << " rows >= INT_MAX");
  scratch.flags.reserve(static_cast<size_t>(d), stream);
  const index_t threads = d * 32;
  row_flags_kernel<<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0,
                     stream>>>(g, d, h, scratch.flags.data());
  HETSGD_CUDA_CHECK_LAUNCH(stream);
  const thrust::counting_iterator<col_t> ids(0);
  size_t bytes = 0;
  HETSGD_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, ids, scratch.flags.data(), out,
                                               count, static_cast<int>(d), stream));
  scratch.cub_temp.reserve(std::max<size_t>(bytes, 1), stream);
  bytes = scratch.cub_temp.size();
  HETSGD_CUDA_CHECK(cub::DeviceSelect::Flagged(scratch.cub_temp.data(), bytes, ids,
                                               scratch.flags.data(), out, count,
                                               static_cast<int>(d), stream));
}

}  // namespace hetsgd::cuda::detail
