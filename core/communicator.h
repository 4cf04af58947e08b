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

#include "core/cross_rank_offer.h"
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

  /// Short name for reports ("host", "nccl", "cuda-shared").
  virtual const char* name() const = 0;

  /// The elastic centre of a merging algorithm (ALGORITHMS §2), kept by the communicator next
  /// to the replicas so that a merge of GPU replicas moves no parameters through the host.
  /// Sets the centre Z and its history Z_prev from host memory (`n` = layout.total() floats
  /// each; `z_prev` may equal `z`). Call once before merge_centre() and after any host-side
  /// change of the centre (resume, restart).
  virtual void set_centre(const float* z, const float* z_prev, index_t n);

  /// One normalised merge into the centre: A = sum_i weights[i] * params_i (weights sum to 1),
  /// then Z_prev, Z = Z, Z + alpha (A - Z) + mu (Z - Z_prev) (core/math/centre_update.h), then
  /// every replica restarts from the new Z when `beta` >= 1, or is pulled towards it,
  /// W_i += beta (Z - W_i). Same arithmetic as the host merge of the engine. Every device must
  /// be idle; set_centre() must have been called.
  virtual void merge_centre(const std::vector<Device*>& devices, const std::vector<double>& weights,
                            double alpha, double mu, double beta);

  /// Copies the centre and its history to host memory (n floats each; either may be null).
  virtual void read_centre(float* z, float* z_prev);

 private:
  // Host-side centre of the default implementations above (unused by communicators that
  // override all three), allocated on first use.
  std::vector<float> centre_z_, centre_prev_, centre_avg_, centre_tmp_;
  // Scratch of average_rows(), sized by the rows of the call.
  std::vector<float> rows_stage_;
  std::vector<double> rows_acc_;
};

/// Host staging + oneTBB reduction; works for any mix of devices.
std::unique_ptr<Communicator> make_host_communicator();

}  // namespace hetsgd
