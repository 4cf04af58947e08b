/// \file core/communicator.h
/// How replicas are merged and gradients all-reduced (kernels/README.md, communicators).
///
/// The engine never moves parameters itself: it asks a Communicator. The centre model is not
/// the communicator's: it lives in a CentreStore (core/centre_store.h) that the communicator
/// may offer and the engine's Centre owns. The host implementation
/// (make_host_communicator) stages every replica through host memory and reduces with oneTBB;
/// kernels/ provides NCCL and same-GPU implementations (kernels/registry.h: make_communicator).
/// Calls are made from the scheduler thread while every device is idle (at a barrier).
#pragma once

#include <memory>
#include <vector>

#include "core/centre_store.h"
#include "core/cross_rank_offer.h"
#include "core/device.h"
#include "core/param_rows.h"

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
  /// The host communicator moves only the union of the devices' gradient_rows() when every
  /// device can list them (a sparse all-reduce: same sums, the other rows are zero on every
  /// device anyway), and the whole buffer otherwise.
  virtual void allreduce_gradients(const std::vector<Device*>& devices,
                                   const std::vector<double>& weights) = 0;

  /// average_params() restricted to `rows` (core/param_rows.h): `average` receives
  /// packed_size(layout, rows) floats, each the same double-accumulated weighted sum as
  /// average_params() gives for that parameter. The default stages every replica's rows
  /// through host memory (Device::read_rows).
  virtual void average_rows(const std::vector<Device*>& devices, const std::vector<double>& weights,
                            const ParamRows& rows, float* average);
  /// Writes the packed `params` into `rows` of every device's replica (Device::write_rows).
  virtual void broadcast_rows(const std::vector<Device*>& devices, const ParamRows& rows,
                              const float* params);

  /// True when average_rows() and broadcast_rows() reduce over everything the merge spans, so
  /// a merge may move only the rows its devices touched. A communicator that also reduces
  /// across processes (core/cluster) says false: each process touched other rows, and their union
  /// is not known locally, so merges there stay dense.
  virtual bool merges_rows() const { return true; }

  /// Across processes (core/cluster/cluster_communicator.h): an offer of a CrossRankSum that adds
  /// the ranks' results on this communicator's own devices (e.g. NCCL between GPUs), or none
  /// (the default) to add them in host memory through the Cluster. Not collective: it only
  /// offers; ClusterCommunicator agrees with the other ranks before making it.
  virtual CrossRankOffer cross_rank_offer() const { return {}; }

  /// Short name for reports ("host", "nccl", "cuda-shared", "cluster"); never a behaviour
  /// switch.
  virtual const char* name() const = 0;

  /// A store that keeps the elastic centre next to this communicator's replicas
  /// (core/centre_store.h), e.g. in GPU memory so that a merge of GPU replicas moves no model
  /// through the host; null (the default) when the centre is best kept in host memory (the
  /// engine's Centre then uses the host store). Called once per run.
  virtual std::unique_ptr<CentreStore> make_centre_store() { return nullptr; }

 private:
  // Scratch of average_rows(), sized by the rows of the call.
  std::vector<float> rows_stage_;
  std::vector<double> rows_acc_;
};

/// Host staging + oneTBB reduction; works for any mix of devices.
std::unique_ptr<Communicator> make_host_communicator();

}  // namespace hetsgd
