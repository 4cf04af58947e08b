/// \file core/emulated_device.h
/// Heterogeneity emulation (kernels/README.md, decorators): a decorator that stretches every
/// compute call of the wrapped Device to 1/speed of its measured duration by sleeping afterwards.
/// This is how a heterogeneous server is reproduced on a machine without one; every number measured
/// through it must be labelled as emulation.
#pragma once

#include <memory>

#include "core/device.h"

namespace hetsgd {

/// Wraps `inner` so that it runs at `speed` (0 < speed <= 1) of its real speed. The returned
/// device reports `inner->id()` with the speed factor set.
std::unique_ptr<Device> make_emulated_device(std::unique_ptr<Device> inner, double speed);

}  // namespace hetsgd
