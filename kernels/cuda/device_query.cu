// Which GPUs exist: the part of the CUDA seam that needs no model.
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"
#include "kernels/cuda/api.h"

namespace hetsgd::cuda {

int device_count() {
  int n = 0;
  // A machine without a driver or GPU reports an error here: that simply means no CUDA device.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string device_name(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count()) {
    throw DeviceUnavailable("cuda:" + std::to_string(ordinal) + ": only " +
                            std::to_string(device_count()) + " CUDA device(s) present");
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError("cudaGetDeviceProperties failed for cuda:" + std::to_string(ordinal));
  }
  return prop.name;
}

}  // namespace hetsgd::cuda
