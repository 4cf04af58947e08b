/// \file core/engine/centre.h
/// The centre model Z of model-averaging training, its history Z_prev, and the merge that
/// moves it (ALGORITHMS §3-4).
///
/// merge(): A = sum_i p_i W_i over the alive replicas (through the Communicator, so GPU
/// replicas can reduce where they live), Z' = Z + alpha (A - Z) + mu (Z - Z_prev), then every
/// replica restarts from Z' (beta = 1) or is pulled W_i += beta (Z' - W_i). Host buffers of
/// layout().total() floats each. Called from the scheduler thread while every device is idle.
#pragma once

#include <vector>

#include "core/communicator.h"
#include "core/device.h"
#include "core/types.h"

namespace hetsgd {

/// The centre model and its scratch buffers.
class Centre {
 public:
  /// A centre of `param_count` floats (zero until set).
  explicit Centre(index_t param_count);

  /// Z and Z_prev (host, param_count floats).
  std::vector<float>& z() { return z_; }
  const std::vector<float>& z() const { return z_; }
  std::vector<float>& z_prev() { return z_prev_; }
  const std::vector<float>& z_prev() const { return z_prev_; }

  /// Z = Z_prev = `device`'s parameters (the start of a fresh run).
  void start_from(Device& device);
  /// Writes Z into every device of `devices`.
  void broadcast(Communicator& comm, const std::vector<Device*>& devices) const;
  /// Normalised merge and elastic centre update over `live` with weights `w` (sum 1), then
  /// restart (beta >= 1) or pull of the replicas.
  void merge(Communicator& comm, const std::vector<Device*>& live, const std::vector<double>& w,
             double alpha, double beta, double mu);
  /// One synchronous EASGD exchange (Zhang et al. eq. 5-6, both moves from the old centre):
  /// Z <- Z + a sum_i (W_i - Z), W_i <- W_i - a (W_i - Z_old).
  void easgd_exchange(Communicator& comm, const std::vector<Device*>& live, double a);
  /// Z = Z_prev = `device`'s replica (sync keeps no separate centre: replicas are identical).
  void refresh_from(Device& device);

  /// Exponential moving average of Z over rounds (Polyak-style averaging: the model that is
  /// evaluated and saved when enabled): A <- decay A + (1 - decay) Z after every round, A = Z
  /// at the first call. `decay` in (0, 1).
  void update_average(double decay);
  /// The averaged model (empty until update_average() ran).
  std::vector<float>& average() { return average_; }
  const std::vector<float>& average() const { return average_; }
  /// What evaluation and selection see: the average when there is one, else Z.
  const std::vector<float>& evaluated() const { return average_.empty() ? z_ : average_; }

  /// Evaluation on a replica that may not hold the evaluated model: saves the replica, writes
  /// evaluated() in.
  void swap_in(Device& device);
  /// Restores the replica saved by swap_in().
  void swap_out(Device& device);

 private:
  index_t n_;
  std::vector<float> z_, z_prev_, avg_, tmp_, average_;
};

}  // namespace hetsgd
