/// \file apps/memory_estimate.h
/// What a training run will hold in memory, estimated from the model's shape before anything
/// is allocated, so that `hetsgd train` can print it and refuse a run that cannot fit
/// (core/memory_budget.h) instead of dying in an allocation or an OOM kill.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/engine/train_options.h"
#include "core/model_config.h"

namespace hetsgd::app {

/// Bytes by kind.
struct MemoryEstimate {
  std::uint64_t model = 0;      ///< parameter replicas (one per device) and the host centre
  std::uint64_t optimizer = 0;  ///< gradients and optimiser moments, per replica
  std::uint64_t buffers = 0;    ///< merge, selection and scoring buffers
  std::uint64_t total() const;
};

/// The estimate for `config` on `devices` with `options`: per replica parameters, a gradient
/// (without the shortlisted output layer's columns unless sync writes them) and the
/// optimiser's moments (two for Adam, one for momentum; the shortlisted output layer's by its
/// own optimiser), and a CPU replica's label index; on the host the centre Z, Z_prev with
/// momentum, the dense merge's average and scratch when a CUDA device is merged, keep-best
/// and moving-average copies when enabled, and batch x chunk scoring buffers. The loaded data
/// is not counted (it is resident before the check). Saturates instead of overflowing.
MemoryEstimate estimate_training_memory(const ModelConfig& config,
                                        const std::vector<DeviceId>& devices,
                                        const TrainOptions& options);

/// "model 1.2 GB, optimiser 2.4 GB, buffers 0.3 GB (total 3.9 GB)".
std::string describe(const MemoryEstimate& estimate);

}  // namespace hetsgd::app
