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
