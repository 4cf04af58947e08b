/// \file kernels/registry.h
/// Makes Devices from their text form and reports what this build and machine offer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device.h"

namespace hetsgd {

/// Makes the device `id` holding a replica of `config` initialised from `config.seed`
/// (every device made from the same config starts from identical parameters).
/// A speed factor < 1 wraps the device in the emulation decorator.
/// Throws DeviceUnavailable when the kind is not built or the ordinal does not exist.
std::unique_ptr<Device> make_device(const DeviceId& id, const ModelConfig& config,
                                    const DeviceOptions& options = {});

/// The output layer every replica of a run on `devices` trains with, so that all of them
/// optimise one objective: with a CUDA device in the set, `auto` becomes the full softmax on
/// every device. The CUDA backend scores every label; a CPU replica shortlisting next to it
/// would train a sampled objective with its own output optimiser, and the merges would average
/// replicas of two different problems. The full softmax is the exact objective the shortlist
/// approximates, so the mixed run keeps the GPU's semantics and the CPU replica pays for the
/// full output layer (adaptive batching gives it the smaller share). An explicit shortlist
/// with a CUDA device is refused (InvalidArgument naming the device). CPU-only sets are
/// returned unchanged.
ModelConfig resolve_output_layer(const ModelConfig& config, const std::vector<DeviceId>& devices);

/// Resolves a `--devices` value: `auto` = every GPU, else two CPU workers; otherwise the list.
std::vector<DeviceId> resolve_devices(const std::string& text);

/// The best Communicator for `devices`: NCCL across distinct GPUs, a device-side sum for
/// virtual devices sharing one GPU, host staging otherwise (any mix with CPU devices).
std::unique_ptr<Communicator> make_communicator(const std::vector<Device*>& devices);

/// Number of CUDA devices visible (0 in CPU-only builds).
int cuda_device_count();

/// One line per device available here (for `hetsgd devices`).
std::vector<std::string> describe_devices();

/// Build configuration: version, CUDA on/off and archs, NCCL, TBB version.
std::string build_info();

}  // namespace hetsgd
