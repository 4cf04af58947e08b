// The dense layers: cuBLAS GEMMs in the row-major <-> column-major mapping, bias and ReLU.
#include "kernels/cuda/dense.cuh"

#include <climits>

#include "core/error.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/launch.cuh"

namespace hetsgd::cuda::detail {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

__global__ void add_bias_kernel(float* z, const float* b, index_t count, index_t n, bool relu) {
  for (index_t i = grid_start(); i < count; i += grid_stride()) {
    const float v = z[i] + b[i % n];
    z[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void fill_kernel(float* x, float v, index_t count) {
  for (index_t i = grid_start(); i < count; i += grid_stride()) x[i] = v;
}

__global__ void relu_backward_kernel(float* d, const float* act, index_t count) {
  for (index_t i = grid_start(); i < count; i += grid_stride()) {
    if (!(act[i] > 0.0f)) d[i] = 0.0f;
  }
}

// cuBLAS takes int dimensions: a layer wider than INT_MAX is refused rather than truncated.
int dim(index_t v, const char* what) {
  HETSGD_CHECK(v >= 0 && v <= INT_MAX, "cuBLAS dimension " << what << " = " << v << " > INT_MAX");
  return static_cast<int>(v);
}

}  // namespace

void launch_add_bias(float* z, const float* b, index_t rows, index_t n, bool relu,
                     cudaStream_t stream) {
  const index_t count = rows * n;
  if (count == 0) return;
  add_bias_kernel<<<grid_for(count), kThreads, 0, stream>>>(z, b, count, n, relu);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_fill(float* x, float v, index_t count, cudaStream_t stream) {
  if (count == 0) return;
  fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, v, count);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void launch_relu_backward(float* d, const float* act, index_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_backward_kernel<<<grid_for(count), kThreads, 0, stream>>>(d, act, count);
  HETSGD_CUDA_CHECK_LAUNCH(stream);
}

void dense_forward(cublasHandle_t handle, const float* a, index_t rows, index_t in, const float* w,
                   index_t ldw, index_t n, float* z) {
  if (rows == 0 || n == 0) return;
  // z^T (n x rows) = w_block^T (n x in) a^T (in x rows); w_block^T is column-major with
  // leading dimension ldw, exactly the row-major w offset by c0.
  HETSGD_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim(n, "n"), dim(rows, "rows"),
                                  dim(in, "in"), &kOne, w, dim(ldw, "ldw"), a, dim(in, "in"),
                                  &kZero, z, dim(n, "n")));
}

void bias_gradient(cublasHandle_t handle, const float* delta, index_t rows, index_t n,
                   const float* ones, float* db) {
  HETSGD_CUBLAS_CHECK(cublasSgemv(handle, CUBLAS_OP_N, dim(n, "n"), dim(rows, "rows"), &kOne, delta,
                                  dim(n, "n"), ones, 1, &kZero, db, 1));
}

void dense_backward(cublasHandle_t handle, const float* a, const float* delta, const float* w,
                    index_t rows, index_t in, index_t out, const float* ones, float* dw, float* db,
                    float* da, cudaStream_t stream) {
  const int r = dim(rows, "rows"), i = dim(in, "in"), o = dim(out, "out");
  // dw (in x out, row-major) = a^T delta  <=>  dw^T = delta^T a in column-major terms.
  HETSGD_CUBLAS_CHECK(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, o, i, r, &kOne, delta, o, a, i, &kZero, dw, o));
  bias_gradient(handle, delta, rows, out, ones, db);
  if (da == nullptr) return;
  // da (rows x in) = delta w^T  <=>  da^T = w delta^T, then masked by ReLU'(a).
  HETSGD_CUBLAS_CHECK(
      cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, i, r, o, &kOne, w, o, delta, o, &kZero, da, i));
  launch_relu_backward(da, a, rows * in, stream);
}

void dense_forward_t(cublasHandle_t handle, const float* a, index_t rows, index_t in,
                     const float* wt, index_t n, float* z) {
  if (rows == 0 || n == 0) return;
  // z^T (n x rows) = wt_block (n x in) a^T (in x rows); the row-major wt_block is the
  // column-major in x n matrix with leading dimension in, so it enters transposed.
  HETSGD_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, dim(n, "n"), dim(rows, "rows"),
                                  dim(in, "in"), &kOne, wt, dim(in, "in"), a, dim(in, "in"), &kZero,
                                  z, dim(n, "n")));
}

void dense_backward_t(cublasHandle_t handle, const float* a, const float* delta, const float* wt,
                      index_t rows, index_t in, index_t out, const float* ones, float* dwt,
                      float* db, float* da, cudaStream_t stream) {
  const int r = dim(rows, "rows"), i = dim(in, "in"), o = dim(out, "out");
  // dwt (out x in, row-major) = delta^T a  <=>  dwt^T (in x out) = a^T delta in column-major
  // terms, with a^T the column-major view of a and delta the transpose of delta's view.
  HETSGD_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, i, o, r, &kOne, a, i, delta, o,
                                  &kZero, dwt, i));
  bias_gradient(handle, delta, rows, out, ones, db);
  if (da == nullptr) return;
  // da (rows x in) = delta wt  <=>  da^T = wt^T delta^T, wt^T being wt's column-major view.
  HETSGD_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, i, r, o, &kOne, wt, i, delta, o,
                                  &kZero, da, i));
  launch_relu_backward(da, a, rows * in, stream);
}

}  // namespace hetsgd::cuda::detail
