/// \file kernels/cpu/dense.h
/// Dense layers of the MLP on the host: single-threaded sgemm calls on fixed row or column
/// blocks, run in parallel by the caller's TBB arena (see parallel.h for why blocks are fixed).
///
/// Shapes (row-major): X [rows x in], W [in x out], b [out], Y [rows x out].
/// Must be called inside the device's task_arena; OpenBLAS must be single-threaded
/// (ensure_single_threaded_blas()).
#pragma once

#include <string>

#include "core/types.h"

namespace hetsgd::cpu {

/// Sets OpenBLAS to one thread, once per process: parallelism comes from the TBB arenas. Also
/// replaces OpenBLAS's generic SSE3 kernels by AVX2/AVX-512 ones when an older library did not
/// recognise the CPU (see dense.cpp); setting OPENBLAS_CORETYPE disables that.
void ensure_single_threaded_blas();

/// The OpenBLAS kernel family in use (e.g. "SkylakeX"), after ensure_single_threaded_blas().
std::string blas_core_name();

/// Y = X W + b, then ReLU when `relu`.
void dense_forward(const float* x, index_t rows, index_t in, index_t out, const float* w,
                   const float* b, bool relu, float* y);

/// Weight and bias gradients of Y = X W + b from dY: dW = X^T dY ([in x out], overwritten),
/// db = column sums of dY ([out], overwritten).
void dense_weight_grad(const float* x, const float* dy, index_t rows, index_t in, index_t out,
                       float* dw, float* db);

/// Input gradient dX = (dY W^T) masked by the ReLU of the layer below: dX[r,i] = 0 where
/// x_act[r,i] <= 0 (x_act is that layer's post-ReLU output). dX is [rows x in].
void dense_input_grad(const float* dy, const float* w, const float* x_act, index_t rows, index_t in,
                      index_t out, float* dx);

/// The same three with W stored transposed, Wt [out x in] (the output layer, stored by label;
/// param_layout.h): Y = X Wt^T + b; dWt = dY^T X ([out x in], overwritten) and db; dX = dY Wt
/// masked by the ReLU below. Each element gets one sgemm's sum over the same range as above.
void dense_forward_t(const float* x, index_t rows, index_t in, index_t out, const float* wt,
                     const float* b, bool relu, float* y);
void dense_weight_grad_t(const float* x, const float* dy, index_t rows, index_t in, index_t out,
                         float* dwt, float* db);
void dense_input_grad_t(const float* dy, const float* wt, const float* x_act, index_t rows,
                        index_t in, index_t out, float* dx);

/// db = column sums of d ([rows x out]), summed in row order.
void column_sums(const float* d, index_t rows, index_t out, float* db);

}  // namespace hetsgd::cpu
