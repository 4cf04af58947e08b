/// \file core/faulty_device.h
/// Fault injection for elasticity tests and demos (kernels/README.md, decorators): a decorator that
/// makes the wrapped Device fail the way a lost GPU does.
///
/// Once the fault fires, the device is dead: every later call that touches the replica
/// (steps, parameter and gradient transfers, prediction) throws DeviceUnavailable too, so a
/// scheduler that keeps using a failed device is caught. id(), name(), config() and layout()
/// keep working so that the failure can be reported.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/device.h"
#include "core/types.h"

namespace hetsgd {

/// When the wrapped device fails. Steps are train_step() and gradient() calls.
struct FaultSpec {
  index_t fail_after_steps = -1;  ///< the step after this many successful steps throws; -1 = never
  double fail_probability = 0.0;  ///< each step throws with this probability (0 = never)
  std::uint64_t seed = 1;         ///< seed of the per-step draws (counter-based, reproducible)
  std::string message = "injected device failure";  ///< text of the DeviceUnavailable thrown
};

/// Parses `after=N`, `p=F`, `seed=S`, `msg=TEXT`, comma-separated (e.g. "after=200,seed=3").
/// Throws InvalidArgument naming the bad item.
FaultSpec parse_fault_spec(const std::string& text);

/// Wraps `inner` so that it fails per `spec`. The returned device reports inner's id and a
/// name with " (fault-injected)" appended.
std::unique_ptr<Device> make_faulty_device(std::unique_ptr<Device> inner, FaultSpec spec);

}  // namespace hetsgd
