/// \file apps/memory_estimate.h
/// The printed form of a memory estimate (kernels/replicas.h: estimate_replica_bytes, which
/// make_replicas() checks before it allocates).
#pragma once

#include <string>

#include "kernels/replicas.h"

namespace hetsgd::app {

/// "model 1.2 GB, optimiser 2.4 GB, buffers 0.3 GB (host 3.9 GB)", with ", GPU 2.0 GB" when
/// CUDA replicas hold some.
std::string describe(const MemoryEstimate& estimate);

}  // namespace hetsgd::app
