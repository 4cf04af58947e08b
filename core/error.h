/// \file core/error.h
/// The exception hierarchy of hetsgd and the checking macros used by every layer.
///
/// Library code throws; it never calls exit(). The command line maps InvalidArgument and
/// IoError (bad input) and every other Error to exit code 1. These types are host-only and free
/// of CUDA headers, so core/ and apps/ can catch CUDA failures without including CUDA.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace hetsgd {

/// Base of every error hetsgd throws.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A precondition or user input was out of its bounds (message names value and bound).
struct InvalidArgument : Error {
  using Error::Error;
};
/// A file could not be read, written or parsed (message names file and line where one exists).
struct IoError : Error {
  using Error::Error;
};
/// The requested device does not exist in this build or on this machine.
struct DeviceUnavailable : Error {
  using Error::Error;
};
/// A CUDA runtime call failed.
struct CudaError : Error {
  using Error::Error;
};
/// A cuSPARSE or cuBLAS call failed.
struct CusparseError : Error {
  using Error::Error;
};
/// An NCCL call failed.
struct NcclError : Error {
  using Error::Error;
};
/// Training diverged: a loss or a parameter became NaN or infinite.
struct NumericalError : Error {
  using Error::Error;
};

}  // namespace hetsgd

/// Precondition / user-input check: throws hetsgd::InvalidArgument with file:line and a
/// streamed message, e.g. `HETSGD_CHECK(l < n, "label id " << l << " >= num_labels " << n);`
#define HETSGD_CHECK(cond, ...)                           \
  do {                                                    \
    if (!(cond)) {                                        \
      std::ostringstream hetsgd_msg_;                     \
      hetsgd_msg_ << __VA_ARGS__;                         \
      throw ::hetsgd::InvalidArgument(hetsgd_msg_.str()); \
    }                                                     \
  } while (false)

/// Like HETSGD_CHECK, for numerical health (NaN/Inf): throws hetsgd::NumericalError.
#define HETSGD_CHECK_NUMERIC(cond, ...)                  \
  do {                                                   \
    if (!(cond)) {                                       \
      std::ostringstream hetsgd_msg_;                    \
      hetsgd_msg_ << __VA_ARGS__;                        \
      throw ::hetsgd::NumericalError(hetsgd_msg_.str()); \
    }                                                    \
  } while (false)

/// Throws hetsgd::Error for a branch that must be unreachable.
#define HETSGD_FAIL(...)                                               \
  do {                                                                 \
    std::ostringstream hetsgd_msg_;                                    \
    hetsgd_msg_ << __FILE__ << ':' << __LINE__ << ": " << __VA_ARGS__; \
    throw ::hetsgd::Error(hetsgd_msg_.str());                          \
  } while (false)

/// Internal invariant; aborts in debug builds, compiled out under NDEBUG.
#ifndef NDEBUG
#define HETSGD_ASSERT(cond)                                                             \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::ostringstream hetsgd_msg_;                                                   \
      hetsgd_msg_ << __FILE__ << ':' << __LINE__ << ": assertion `" #cond "` failed\n"; \
      std::fputs(hetsgd_msg_.str().c_str(), stderr);                                    \
      std::abort();                                                                     \
    }                                                                                   \
  } while (false)
#else
#define HETSGD_ASSERT(cond) \
  do {                      \
  } while (false)
#endif
