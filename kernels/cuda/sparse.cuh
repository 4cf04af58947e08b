/// \file kernels/cuda/sparse.cuh
/// The sparse first layer on one GPU: cuSPARSE SpMM forward, the batch's distinct features,
/// the row-sparse gradient scatter and row lists (nvcc-only header). Twin of
/// kernels/cpu/sparse.cpp.
///
/// Nothing here synchronises the stream or allocates outside it: row counts stay in device
/// memory (`int` counts: a batch holds fewer than 2^31 nonzeros, checked when it is staged),
/// and kernels that walk a row list read the count there and are launched for its capacity.
/// Scratch memory grows stream-ordered, so several devices sharing one GPU never wait for
/// each other here.
#pragma once

#include <cuda_runtime.h>
#include <cusparse.h>

#include "core/types.h"
#include "kernels/cuda/device_buffer.cuh"

namespace hetsgd::cuda::detail {

/// Reusable scratch of the sparse-layer operations of one device (grow-only, stream-ordered).
struct SparseScratch {
  DeviceBuffer<unsigned char> cub_temp;   ///< CUB sort / unique / select workspace
  DeviceBuffer<col_t> sorted;             ///< sorted copy of a batch's feature ids
  DeviceBuffer<unsigned char> flags;      ///< one flag per first-layer row
  DeviceBuffer<unsigned char> spmm;       ///< cuSPARSE SpMM workspace
  DeviceBuffer<col_t> seg_keys;           ///< the scatter's nonzeros' rows, sorted
  DeviceBuffer<int> seg_iota, seg_order;  ///< 0..nnz-1, and the nonzeros in row order
  DeviceBuffer<int> seg_start;            ///< first sorted nonzero of each row (U + 1)
  cusparseSpMMAlg_t spmm_alg = CUSPARSE_SPMM_CSR_ALG2;
};

/// out (rows x h, row-major) = X W for the CSR batch X (rows x d; 32-bit offsets `indptr`,
/// `cols`, `vals`, nnz nonzeros) and the row-major d x h matrix W. CSR_ALG2 (deterministic,
/// row-major operands) unless cuSPARSE refuses it, then the default algorithm from then on.
void sparse_forward(cusparseHandle_t handle, index_t rows, index_t d, index_t nnz,
                    const int* indptr, const col_t* cols, const float* vals, const float* w,
                    index_t h, float* out, SparseScratch& scratch, cudaStream_t stream);

/// Sorted distinct feature ids of a batch: writes them to `uniq` (capacity >= nnz), their
/// number U to `*count` (device memory) and, for every nonzero e, compact[e] = position of
/// cols[e] in `uniq`. Ids must be in [0, num_features). Does not synchronise.
void compact_features(const col_t* cols, index_t nnz, index_t num_features, col_t* uniq,
                      col_t* compact, int* count, SparseScratch& scratch, cudaStream_t stream);

/// Row-sparse first-layer gradient: g[compact[e], :] = sum over e of scale * val[e] *
/// dh[row[e], :] for the `*count` distinct rows (device-side count, at most nnz), with `g` the
/// compact gradient (rows past the count untouched). No atomics: the nonzeros are sorted by
/// row and each row's sum runs in nonzero order with separately rounded operations, so the
/// result is the serial loop's, bit for bit, every run. nnz * h must fit in 63 bits.
void launch_scatter_rows(const int* row_of, const col_t* compact, const int* count,
                         const float* val, index_t nnz, const float* dh, index_t h, float scale,
                         float* g, SparseScratch& scratch, cudaStream_t stream);

/// dense[rows[r], :] = compact[r, :] for r < *count (rows distinct; capacity bounds *count),
/// width h.
void launch_expand_rows(float* dense, const float* compact, const col_t* rows, const int* count,
                        index_t capacity, index_t h, cudaStream_t stream);

/// Ids of the rows of a `d` x `h` matrix that hold any nonzero, ascending, into `out`
/// (capacity d), their number into `*count` (device memory). Does not synchronise.
void nonzero_rows(const float* g, index_t d, index_t h, col_t* out, int* count,
                  SparseScratch& scratch, cudaStream_t stream);

}  // namespace hetsgd::cuda::detail
