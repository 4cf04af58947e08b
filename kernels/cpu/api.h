/// \file kernels/cpu/api.h
/// The CPU backend: a replica in host memory, trained with oneTBB + single-threaded BLAS.
#pragma once

#include <memory>
#include <string>

#include "core/device.h"

namespace hetsgd::cpu {

/// Makes CPU worker `ordinal`, with its own oneTBB arena of `options.threads` threads
/// (0 = all hardware threads). Dense GEMMs run single-threaded BLAS inside that arena, so
/// several CPU workers in one process do not oversubscribe the cores.
std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options);

/// Approximate top-k of a CPU device's model with its label index (HNSW over the output
/// layer, built on first use; see CpuDevice::predict_topk_ann). `labels` / `scores` are
/// rows*k arrays like Device::predict_topk(). Throws InvalidArgument when `device` is not a
/// CPU device.
float predict_topk_ann(Device& device, const CsrBatch& batch, int k, col_t* labels, float* scores);

/// The BLAS kernel family the CPU backend runs (OpenBLAS core name, e.g. "SkylakeX"), for
/// build and device reports. Configures BLAS on first use, like make_device().
std::string blas_core_name();

}  // namespace hetsgd::cpu
