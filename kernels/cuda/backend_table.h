/// \file kernels/cuda/backend_table.h
/// The CUDA backend as a loadable module: the table of kernels/cuda/api.h's functions that
/// libhetsgd_cuda.so exports (module_entry.cpp) and cuda_loader.cpp looks up on first use,
/// so that the `hetsgd` binary maps the CUDA libraries only when a CUDA device is asked for.
/// Host-only header; both sides come from the same build (the version guards a mix-up).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device.h"

namespace hetsgd::cuda {

/// Bumped whenever the table or a signature in it changes.
inline constexpr int kBackendTableVersion = 1;

struct BackendTable {
  int version = kBackendTableVersion;
  int (*device_count)() = nullptr;
  std::string (*device_name)(int) = nullptr;
  std::unique_ptr<Device> (*make_device)(int, const ModelConfig&, const DeviceOptions&) = nullptr;
  std::unique_ptr<Communicator> (*make_cuda_communicator)(const std::vector<Device*>&) = nullptr;
  CrossRankOffer (*nccl_cross_rank_offer)(const std::vector<Device*>&) = nullptr;
};

}  // namespace hetsgd::cuda

/// The module's one entry point (C linkage, looked up by name).
extern "C" const hetsgd::cuda::BackendTable* hetsgd_cuda_backend_table();
