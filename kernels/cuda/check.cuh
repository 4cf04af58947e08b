/// \file kernels/cuda/check.cuh
/// Error checking for CUDA runtime, cuSPARSE, cuBLAS and NCCL calls (nvcc-only header).
///
/// Every failing call throws a hetsgd error type from core/error.h, so callers catch CUDA
/// failures without CUDA headers. The message names the call, the status and file:line.
/// HETSGD_CUDA_CHECK clears the sticky "last error" before throwing, so that a recoverable
/// error (e.g. an allocation failure) does not poison the next unrelated check. The *_NOTHROW
/// variants log to stderr and are for destructors only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstdio>
#include <string>

#include "core/error.h"

namespace hetsgd::cuda::detail {

/// Formats "<call> -> <status>: <text> at <file>:<line>".
inline std::string error_message(const char* call, const char* status, const char* text,
                                 const char* file, int line) {
  return std::string(call) + " -> " + status + ": " + text + " at " + file + ":" +
         std::to_string(line);
}

/// cuBLAS has no status-to-string before 11.4 in every distribution; keep our own names.
inline const char* cublas_status_name(cublasStatus_t st) {
  switch (st) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}

}  // namespace hetsgd::cuda::detail

/// Checks a CUDA runtime call; clears the sticky error, then throws hetsgd::CudaError.
#define HETSGD_CUDA_CHECK(call)                                                          \
  do {                                                                                   \
    const cudaError_t hetsgd_st_ = (call);                                               \
    if (hetsgd_st_ != cudaSuccess) {                                                     \
      (void)cudaGetLastError(); /* clear sticky state before unwinding */                \
      throw ::hetsgd::CudaError(::hetsgd::cuda::detail::error_message(                   \
          #call, cudaGetErrorName(hetsgd_st_), cudaGetErrorString(hetsgd_st_), __FILE__, \
          __LINE__));                                                                    \
    }                                                                                    \
  } while (false)

/// After every kernel launch: synchronises the stream in debug builds (so the failing kernel
/// is named), only peeks at the launch status in release builds.
#ifndef NDEBUG
#define HETSGD_CUDA_CHECK_LAUNCH(stream)              \
  do {                                                \
    HETSGD_CUDA_CHECK(cudaPeekAtLastError());         \
    HETSGD_CUDA_CHECK(cudaStreamSynchronize(stream)); \
  } while (false)
#else
#define HETSGD_CUDA_CHECK_LAUNCH(stream) HETSGD_CUDA_CHECK(cudaPeekAtLastError())
#endif

/// Checks a cuSPARSE call; throws hetsgd::CusparseError.
#define HETSGD_CUSPARSE_CHECK(call)                                                              \
  do {                                                                                           \
    const cusparseStatus_t hetsgd_st_ = (call);                                                  \
    if (hetsgd_st_ != CUSPARSE_STATUS_SUCCESS) {                                                 \
      throw ::hetsgd::CusparseError(::hetsgd::cuda::detail::error_message(                       \
          #call, cusparseGetErrorName(hetsgd_st_), cusparseGetErrorString(hetsgd_st_), __FILE__, \
          __LINE__));                                                                            \
    }                                                                                            \
  } while (false)

/// Checks a cuBLAS call; throws hetsgd::CusparseError (the "sparse/dense math library" error).
#define HETSGD_CUBLAS_CHECK(call)                                                          \
  do {                                                                                     \
    const cublasStatus_t hetsgd_st_ = (call);                                              \
    if (hetsgd_st_ != CUBLAS_STATUS_SUCCESS) {                                             \
      throw ::hetsgd::CusparseError(::hetsgd::cuda::detail::error_message(                 \
          #call, ::hetsgd::cuda::detail::cublas_status_name(hetsgd_st_), "cuBLAS failure", \
          __FILE__, __LINE__));                                                            \
    }                                                                                      \
  } while (false)

/// Checks an NCCL call; throws hetsgd::NcclError. Only usable where nccl.h is included.
#define HETSGD_NCCL_CHECK(call)                                                      \
  do {                                                                               \
    const ncclResult_t hetsgd_st_ = (call);                                          \
    if (hetsgd_st_ != ncclSuccess) {                                                 \
      throw ::hetsgd::NcclError(::hetsgd::cuda::detail::error_message(               \
          #call, "ncclResult", ncclGetErrorString(hetsgd_st_), __FILE__, __LINE__)); \
    }                                                                                \
  } while (false)

/// Destructor-safe variants: report on stderr, never throw.
#define HETSGD_CUDA_CHECK_NOTHROW(call)                                                        \
  do {                                                                                         \
    const cudaError_t hetsgd_st_ = (call);                                                     \
    if (hetsgd_st_ != cudaSuccess) {                                                           \
      (void)cudaGetLastError();                                                                \
      std::fprintf(stderr, "hetsgd: %s -> %s at %s:%d\n", #call, cudaGetErrorName(hetsgd_st_), \
                   __FILE__, __LINE__);                                                        \
    }                                                                                          \
  } while (false)
#define HETSGD_CUSPARSE_CHECK_NOTHROW(call)                                                        \
  do {                                                                                             \
    const cusparseStatus_t hetsgd_st_ = (call);                                                    \
    if (hetsgd_st_ != CUSPARSE_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "hetsgd: %s -> %s at %s:%d\n", #call, cusparseGetErrorName(hetsgd_st_), \
                   __FILE__, __LINE__);                                                            \
    }                                                                                              \
  } while (false)
#define HETSGD_CUBLAS_CHECK_NOTHROW(call)                                                       \
  do {                                                                                          \
    const cublasStatus_t hetsgd_st_ = (call);                                                   \
    if (hetsgd_st_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "hetsgd: %s -> %s at %s:%d\n", #call,                                \
                   ::hetsgd::cuda::detail::cublas_status_name(hetsgd_st_), __FILE__, __LINE__); \
    }                                                                                           \
  } while (false)
#define HETSGD_NCCL_CHECK_NOTHROW(call)                                                          \
  do {                                                                                           \
    const ncclResult_t hetsgd_st_ = (call);                                                      \
    if (hetsgd_st_ != ncclSuccess) {                                                             \
      std::fprintf(stderr, "hetsgd: %s -> %s at %s:%d\n", #call, ncclGetErrorString(hetsgd_st_), \
                   __FILE__, __LINE__);                                                          \
    }                                                                                            \
  } while (false)
