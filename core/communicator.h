/// \file core/communicator.h
/// How replicas are merged and gradients all-reduced (DESIGN §5).
///
/// The engine never moves parameters itself: it asks a Communicator. The host implementation
/// (make_host_communicator) stages every replica through host memory and reduces with oneTBB;
/// kernels/ provides NCCL and same-GPU implementations (kernels/registry.h: make_communicator).
/// Calls are made from the scheduler thread while every device is idle (at a barrier).
#pragma once

#include <memory>
#include <vector>

#include "core/device.h"

namespace hetsgd {

/// Collective operations over a set of devices holding replicas of one model.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// average[k] = sum_i weights[i] * params_i[k] for every parameter k (host memory,
  /// layout.total() floats). `weights` has one entry per device; the caller makes them sum to 1.
  virtual void average_params(const std::vector<Device*>& devices,
                              const std::vector<double>& weights, float* average) = 0;

  /// Writes `params` (host memory) into every device's replica.
  virtual void broadcast_params(const std::vector<Device*>& devices, const float* params) = 0;

  /// Replaces every device's gradient buffer by sum_i weights[i] * grad_i (an all-reduce).
  virtual void allreduce_gradients(const std::vector<Device*>& devices,
                                   const std::vector<double>& weights) = 0;

  /// Short name for reports ("host", "nccl", "cuda-shared").
  virtual const char* name() const = 0;
};

/// Host staging + oneTBB reduction; works for any mix of devices.
std::unique_ptr<Communicator> make_host_communicator();

}  // namespace hetsgd
