/// \file kernels/cuda/dense.cuh
/// The dense layers on one GPU: cuBLAS GEMMs plus the bias and ReLU kernels (nvcc-only header).
/// Twin of kernels/cpu/dense.cpp.
///
/// Matrices are row-major. cuBLAS is column-major, so a row-major R x C buffer is handed to it
/// as its C x R transpose: Z = A W becomes Z^T = W^T A^T with no copy. Every call enqueues on
/// the stream bound to the handle (`stream` for the kernels) and returns without synchronising.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/types.h"

namespace hetsgd::cuda::detail {

/// z[r, :] += b (and ReLU when `relu`), for a `rows` x `n` row-major matrix.
void launch_add_bias(float* z, const float* b, index_t rows, index_t n, bool relu,
                     cudaStream_t stream);

/// x[i] = v for `count` elements.
void launch_fill(float* x, float v, index_t count, cudaStream_t stream);

/// d[i] = act[i] > 0 ? d[i] : 0 for `count` elements (ReLU backward through its output).
void launch_relu_backward(float* d, const float* act, index_t count, cudaStream_t stream);

/// z (rows x n, leading dimension n) = a (rows x in) * w[:, c0 : c0 + n], where `w` points at
/// column c0 of an `in` x `ldw` row-major weight matrix. With c0 = 0 and n = ldw this is the
/// whole layer; a smaller n scores one chunk of the output labels. Sizes must fit in int
/// (cuBLAS's 32-bit dimensions; checked).
void dense_forward(cublasHandle_t handle, const float* a, index_t rows, index_t in, const float* w,
                   index_t ldw, index_t n, float* z);

/// Backward of one dense layer z = a w + b for a batch of `rows`: dw (in x out) = a^T delta,
/// db (out) = column sums of delta (a GEMV against `ones`, at least `rows` ones), and, when
/// `da` is not null, da (rows x in) = delta w^T masked by ReLU'(a) (a is the post-ReLU input).
void dense_backward(cublasHandle_t handle, const float* a, const float* delta, const float* w,
                    index_t rows, index_t in, index_t out, const float* ones, float* dw, float* db,
                    float* da, cudaStream_t stream);

/// The output layer, whose weights are stored by label (wt, row-major [out x in]; see
/// core/param_layout.h). dense_forward_t: z (rows x n) = a (rows x in) * wt[c0 : c0 + n, :]^T,
/// where `wt` points at row c0 (the chunk's labels are contiguous). dense_backward_t: the
/// backward of z = a wt^T + b: dwt (out x in) = delta^T a, db as above, and, when `da` is not
/// null, da (rows x in) = delta wt masked by ReLU'(a).
void dense_forward_t(cublasHandle_t handle, const float* a, index_t rows, index_t in,
                     const float* wt, index_t n, float* z);
void dense_backward_t(cublasHandle_t handle, const float* a, const float* delta, const float* wt,
                      index_t rows, index_t in, index_t out, const float* ones, float* dwt,
                      float* db, float* da, cudaStream_t stream);

/// db (n) = column sums of the `rows` x `n` matrix delta (GEMV against `ones`).
void bias_gradient(cublasHandle_t handle, const float* delta, index_t rows, index_t n,
                   const float* ones, float* db);

}  // namespace hetsgd::cuda::detail
