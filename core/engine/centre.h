/// \file core/engine/centre.h
/// The centre model Z of model-averaging training, its history Z_prev, and the merge that
/// moves it (core/engine/README.md).
///
/// merge(): A = sum_i p_i W_i over the alive replicas, Z' = Z + alpha (A - Z) + mu (Z - Z_prev),
/// then every replica restarts from Z' (beta = 1) or is pulled W_i += beta (Z' - W_i). The
/// merge itself is the CentreStore's (core/centre_store.h), obtained once from the run's
/// Communicator: the host store (core/engine/host_centre_store.h, row-sparse where the
/// replicas allow) unless the communicator keeps the centre next to its replicas (GPU memory
/// for CUDA replicas). The Centre keeps the host copy of Z and Z_prev and brings it up to date
/// from the store only when something reads it (z(), z_prev(), evaluated(), update_average,
/// swap_in), and tells the store when it is written (edit_z(), edit_z_prev(), start_from,
/// refresh_from, easgd_exchange). Called from the scheduler thread while every device is idle.
///
/// Memory: the host copy of Z, plus Z_prev only while mu != 0 or EASGD needs it (with mu = 0
/// the history is never read, and history() is Z), plus the store's scratch; EASGD and
/// evaluation swaps allocate a model-sized buffer on first use.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/centre_store.h"
#include "core/communicator.h"
#include "core/device.h"
#include "core/types.h"

namespace hetsgd {

/// The centre model, its store and its scratch buffers.
class Centre {
 public:
  /// A centre of `param_count` floats (zero until set) merged through `comm` (which outlives
  /// it): the store is comm.make_centre_store(), or the host store when it offers none.
  Centre(index_t param_count, Communicator& comm);

  /// Z (host, param_count floats), read back from the store first when a merge moved it.
  const std::vector<float>& z() const;
  /// Z to write (a resume, a broadcast from another node): the next merge starts from it.
  std::vector<float>& edit_z();
  /// Moves Z out (the run is over); the centre is empty afterwards.
  std::vector<float> take_z();
  /// The stored Z_prev: param_count floats, or empty while no history is kept (mu = 0).
  const std::vector<float>& z_prev() const;
  /// Z_prev to write (a resume): see edit_z().
  std::vector<float>& edit_z_prev();
  /// Z_prev as the update sees it: the stored one, or Z when none is kept.
  const std::vector<float>& history() const { return z_prev().empty() ? z() : z_prev(); }

  /// Z = Z_prev = `device`'s parameters (the start of a fresh run).
  void start_from(Device& device);
  /// Floats the last merge moved per replica (diagnostics; the whole model when dense).
  index_t last_merge_floats() const { return store_->last_merge_floats(); }
  /// Bytes of the centre moved between host and device memory so far (0 with the host store).
  std::uint64_t transfer_bytes() const { return store_->transfer_bytes(); }
  /// Writes Z into every device of `devices`.
  void broadcast(const std::vector<Device*>& devices);
  /// broadcast() at the start of a fresh run: every replica then holds Z, so the first merge
  /// can already be sparse (after broadcast() alone, e.g. before a resume writes replicas of
  /// its own, the first merge moves every row).
  void start_replicas(const std::vector<Device*>& devices);
  /// Normalised merge and elastic centre update over `live` with weights `w` (sum 1), then
  /// restart (beta >= 1) or pull of the replicas.
  void merge(const std::vector<Device*>& live, const std::vector<double>& w, double alpha,
             double beta, double mu);
  /// One synchronous EASGD exchange (Zhang et al. eq. 5-6, both moves from the old centre):
  /// Z <- Z + a sum_i (W_i - Z), W_i <- W_i - a (W_i - Z_old).
  void easgd_exchange(const std::vector<Device*>& live, double a);
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
  const std::vector<float>& evaluated() const { return average_.empty() ? z() : average_; }

  /// Evaluation on a replica that may not hold the evaluated model: saves the replica, writes
  /// evaluated() in.
  void swap_in(Device& device);
  /// Restores the replica saved by swap_in().
  void swap_out(Device& device);
  /// Frees every model-sized buffer (the run is over and its model was taken elsewhere).
  void release();

 private:
  // Brings the host copy up to date with the store (after a merge).
  void sync_host() const;
  // The host copy was written: sync first, then tell the store.
  void host_written();
  HostCentre host() const { return HostCentre{&z_, &z_prev_}; }

  index_t n_;
  Communicator& comm_;
  std::unique_ptr<CentreStore> store_;
  // The host copy; mutable because reading it may first bring it up to date.
  mutable std::vector<float> z_, z_prev_;
  mutable bool host_stale_ = false;  // a merge moved the store's Z since the last sync
  std::vector<float> avg_, tmp_, average_;
};

}  // namespace hetsgd
