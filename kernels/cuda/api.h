/// \file kernels/cuda/api.h
/// The link-time seam to the CUDA backend. Defined by the .cu files in CUDA builds and by
/// cuda_disabled.cpp otherwise, so algorithm code never needs `#ifdef`. Host-only header:
/// no CUDA type crosses it.
#pragma once

#include <memory>
#include <string>

#include "core/device.h"

namespace hetsgd::cuda {

/// Number of CUDA devices visible to this process; 0 in CPU builds or when the driver fails.
int device_count();

/// Name of GPU `ordinal` ("NVIDIA H200"); throws DeviceUnavailable if it does not exist.
std::string device_name(int ordinal);

/// Makes a CUDA-resident replica of `config` on GPU `ordinal`. Several virtual devices may share
/// one GPU. Throws DeviceUnavailable in CPU builds or when the ordinal does not exist.
std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options);

}  // namespace hetsgd::cuda
