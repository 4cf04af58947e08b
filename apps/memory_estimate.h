/// \file apps/memory_estimate.h
/// The printed form of a memory estimate (kernels/replicas.h: estimate_replica_bytes, which
/// make_replicas() checks before it allocates).
#pragma once

#include <cstdint>
#include <string>

#include "core/dataset.h"

#include "kernels/replicas.h"

namespace hetsgd::app {

/// "model 1.2 GB, optimiser 2.4 GB, buffers 0.3 GB (host 3.9 GB)", with ", GPU 2.0 GB" when
/// CUDA replicas hold some. With `data_bytes` > 0 (the loaded data sets, already resident),
/// "; with the loaded data 0.4 GB: 4.3 GB" follows: what the process's peak RSS compares with.
std::string describe(const MemoryEstimate& estimate, std::uint64_t data_bytes = 0);

/// Bytes `data`'s arrays hold.
std::uint64_t dataset_bytes(const Dataset& data);

}  // namespace hetsgd::app
