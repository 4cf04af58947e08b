/// \file core/engine/centre.h
/// The centre model Z of model-averaging training, its history Z_prev, and the merge that
/// moves it (ALGORITHMS §3-4).
///
/// merge(): A = sum_i p_i W_i over the alive replicas (through the Communicator, so GPU
/// replicas can reduce where they live), Z' = Z + alpha (A - Z) + mu (Z - Z_prev), then every
/// replica restarts from Z' (beta = 1) or is pulled W_i += beta (Z' - W_i). Host buffers of
/// layout().total() floats each. Called from the scheduler thread while every device is idle.
///
/// Sparse merges (host communicator). Invariant between merges, once known: every replica
/// equals Z outside (rows it touched since the last merge) ∪ D ∪ M, where D (divergent) is
/// empty after a restart (beta >= 1: every replica equals Z) and the rows the last pull moved
/// otherwise, and M (moving) lists the rows where Z != Z_prev (empty unless mu != 0). On a
/// row outside that union every replica holds Z, so A = Z there exactly (the weights sum to
/// 1 and the sum is taken in double), and Z' = Z + mu (Z - Z_prev) = Z: the dense merge would
/// leave that row alone. So a merge moves only the union, in pieces of bounded size, and gives
/// the dense merge's Z, Z_prev and replicas bit for bit. Until the invariant is known (a
/// resume, or after a dense merge with beta < 1 or mu != 0) a merge moves every row; when
/// any replica cannot list its rows (Device::touched_since_sync() = all, e.g. CUDA) or the
/// communicator is a device one, the merge is dense.
///
/// Memory: Z, plus Z_prev only while mu != 0 or EASGD needs it (with mu = 0 the history is
/// never read, and history() is Z), plus scratch of one piece; the dense path and EASGD
/// allocate their model-sized buffers on first use.
#pragma once

#include <vector>

#include "core/communicator.h"
#include "core/device.h"
#include "core/param_rows.h"
#include "core/types.h"

namespace hetsgd {

/// The centre model and its scratch buffers.
class Centre {
 public:
  /// A centre of `param_count` floats (zero until set).
  explicit Centre(index_t param_count);

  /// Z (host, param_count floats).
  std::vector<float>& z() { return z_; }
  const std::vector<float>& z() const { return z_; }
  /// The stored Z_prev: param_count floats, or empty while no history is kept (mu = 0).
  /// Assign a saved history here (resume); after a restore call forget_rows().
  std::vector<float>& z_prev() { return z_prev_; }
  /// Z_prev as the update sees it: the stored one, or Z when none is kept.
  const std::vector<float>& history() const { return z_prev_.empty() ? z_ : z_prev_; }

  /// Z = Z_prev = `device`'s parameters (the start of a fresh run).
  void start_from(Device& device);
  /// The replicas may differ from Z anywhere (set on construction; call after writing
  /// replicas from outside the centre, e.g. a resume): the next host merge moves every row.
  void forget_rows() { rows_known_ = false; }
  /// Floats the last merge moved per replica (diagnostics; the whole model when dense).
  index_t last_merge_floats() const { return last_floats_; }
  /// Writes Z into every device of `devices`.
  void broadcast(Communicator& comm, const std::vector<Device*>& devices) const;
  /// broadcast() at the start of a fresh run: every replica then holds Z, so the first merge
  /// can already be sparse (after broadcast() alone, e.g. before a resume writes replicas of
  /// its own, the first merge moves every row).
  void start_replicas(Communicator& comm, const std::vector<Device*>& devices);
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
  /// Frees every model-sized buffer (the run is over and its model was taken elsewhere).
  void release();

 private:
  // The dense merge (some replica cannot list its rows).
  void merge_dense(Communicator& comm, const std::vector<Device*>& live,
                   const std::vector<double>& w, double alpha, double beta, double mu);
  // The restart merge with Z' = A of merge_rows() done in the replicas' host memory (every
  // live device exposes Device::host_params()); false, with nothing done, otherwise.
  bool merge_in_place(const std::vector<Device*>& live, const std::vector<double>& w,
                      const ParamRows& rows, bool sole_replica);
  // The merge of `rows` only, piece by piece; records the rows Z moved in moving_ (mu != 0).
  void merge_rows(Communicator& comm, const std::vector<Device*>& live,
                  const std::vector<double>& w, const ParamRows& rows, double alpha, double beta,
                  double mu);
  // The rows a merge over `live` must move: all() when dense.
  ParamRows rows_to_merge(const std::vector<Device*>& live, double mu) const;

  index_t n_;
  std::vector<float> z_, z_prev_, avg_, tmp_, average_;
  bool rows_known_ = false;                       // the invariant of the file comment holds
  ParamRows divergent_ = ParamRows::none(false);  // D
  ParamRows moving_ = ParamRows::none(false);     // M
  index_t last_floats_ = 0;
  // One piece of a row merge: average, centre, history, replica.
  std::vector<float> piece_avg_, piece_z_, piece_zp_, piece_w_;
};

}  // namespace hetsgd
