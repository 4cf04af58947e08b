/// \file kernels/cuda/device_guard.cuh
/// RAII: make a GPU current for a scope and restore the previous one afterwards.
///
/// Every public entry point of a CUDA-backed object starts with a DeviceGuard, so a worker
/// thread that drives devices on different GPUs never launches on the wrong one.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

namespace hetsgd::cuda {

/// Sets the current device to `ordinal` on construction; restores the previous on destruction.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    HETSGD_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != ordinal) HETSGD_CUDA_CHECK(cudaSetDevice(ordinal));
    current_ = ordinal;
  }
  ~DeviceGuard() {
    if (previous_ != current_) HETSGD_CUDA_CHECK_NOTHROW(cudaSetDevice(previous_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int current_ = 0;
};

}  // namespace hetsgd::cuda
