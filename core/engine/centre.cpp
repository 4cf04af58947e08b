#include "core/engine/centre.h"

#include <tbb/parallel_for.h>

#include <cstring>

#include "core/engine/merge_weights.h"
#include "core/math/centre_update.h"

namespace hetsgd {
namespace {

// Floats per piece of a row merge: every replica's rows of a piece are staged and summed in
// buffers of this size (4 MB of floats, 8 MB of doubles), whatever the model size.
constexpr index_t kPieceFloats = index_t{1} << 20;

// The elastic update on `n` floats with the per-element arithmetic of every merge path
// (core/math/centre_update.h). Without a stored history (mu = 0) the history term is
// mu (z - z) = 0.
void centre_step(float* z, float* z_prev, const float* avg, index_t n, double alpha, double mu) {
  tbb::parallel_for(tbb::blocked_range<index_t>(0, n, 1 << 14),
                    [&](const tbb::blocked_range<index_t>& r) {
                      for (index_t k = r.begin(); k < r.end(); ++k) {
                        float zp = z_prev != nullptr ? z_prev[k] : z[k];
                        math::centre_update(z[k], zp, avg[k], alpha, mu);
                        if (z_prev != nullptr) z_prev[k] = zp;
                      }
                    });
}

// Adds to `moved` the rows of `piece` where the packed `z` and `old` differ: the rows that
// stay in M (the new centre against the old one) or in D (a pulled replica against Z).
void add_moved_rows(const ParamLayout& layout, const ParamRows& piece, const float* z,
                    const float* old, ParamRows* moved) {
  const index_t h0 = layout.layers()[0].out;
  for (std::size_t i = 0; i < piece.input.size(); ++i) {
    const auto at = static_cast<index_t>(i) * h0;
    for (index_t j = 0; j < h0; ++j) {
      if (z[at + j] != old[at + j]) {
        moved->input.push_back(piece.input[i]);
        break;
      }
    }
  }
  if (piece.output.empty()) return;
  const auto nc = static_cast<index_t>(piece.output.size());
  const index_t rows = layout.layers().back().in + 1;  // weights and the bias
  const index_t base = packed_size(layout, piece) - rows * nc;
  for (index_t c = 0; c < nc; ++c) {
    for (index_t i = 0; i < rows; ++i) {
      const index_t k = base + i * nc + c;
      if (z[k] != old[k]) {
        moved->output.push_back(piece.output[static_cast<std::size_t>(c)]);
        break;
      }
    }
  }
}

}  // namespace

Centre::Centre(index_t param_count) : n_(param_count), z_(static_cast<std::size_t>(param_count)) {}

void Centre::start_from(Device& device) {
  device.read_params(z_.data());
  std::vector<float>().swap(z_prev_);  // Z_prev = Z
  rows_known_ = false;
}

void Centre::broadcast(Communicator& comm, const std::vector<Device*>& devices) const {
  comm.broadcast_params(devices, z_.data());
}

void Centre::start_replicas(Communicator& comm, const std::vector<Device*>& devices) {
  broadcast(comm, devices);
  for (Device* d : devices) d->clear_touched();
  divergent_ = ParamRows::none(false);
  moving_ = ParamRows::none(false);  // Z_prev = Z (start_from)
  rows_known_ = true;
}

void Centre::merge(Communicator& comm, const std::vector<Device*>& live,
                   const std::vector<double>& w, double alpha, double beta, double mu) {
  // The history is read only with block momentum; it starts as Z (history()).
  if (mu != 0.0 && z_prev_.empty()) z_prev_ = z_;
  if (mu == 0.0) std::vector<float>().swap(z_prev_);
  if (std::strcmp(comm.name(), "host") != 0) {
    // A device communicator (NCCL, one shared GPU) averages, updates the centre and restarts
    // or pulls the replicas where they live: per round the host sends Z in and reads Z back,
    // two model copies, instead of staging every replica through host memory.
    comm.set_centre(z_.data(), history().data(), n_);
    comm.merge_centre(live, w, alpha, mu, beta);
    comm.read_centre(z_.data(), z_prev_.empty() ? nullptr : z_prev_.data());
    rows_known_ = false;
    last_floats_ = n_;
    return;
  }
  const ParamRows rows = comm.merges_rows() ? rows_to_merge(live, mu) : ParamRows::all();
  if (rows.everything) {
    merge_dense(comm, live, w, alpha, beta, mu);
    // Every replica now equals Z, and Z_prev = Z on every row only without momentum.
    rows_known_ = beta >= 1.0 && mu == 0.0;
    divergent_ = ParamRows::none(false);
    moving_ = ParamRows::none(false);
  } else {
    // Sets D (empty after a restart) and M.
    merge_rows(comm, live, w, rows, alpha, beta, mu);
    rows_known_ = true;
  }
  for (Device* d : live) d->clear_touched();
}

ParamRows Centre::rows_to_merge(const std::vector<Device*>& live, double mu) const {
  ParamRows u = live[0]->touched_since_sync();
  for (std::size_t i = 1; i < live.size() && !u.everything; ++i) {
    u = unite(u, live[i]->touched_since_sync());
  }
  if (u.everything) return u;
  if (!rows_known_) return ParamRows::every_row(live[0]->layout(), u.output_rows);
  if (!divergent_.empty()) u = unite(u, divergent_);
  if (mu != 0.0 && !moving_.empty()) u = unite(u, moving_);
  u.dense = true;  // b0 and the hidden layers change at every step (and with momentum)
  return u;
}

void Centre::merge_dense(Communicator& comm, const std::vector<Device*>& live,
                         const std::vector<double>& w, double alpha, double beta, double mu) {
  avg_.resize(static_cast<std::size_t>(n_));
  comm.average_params(live, w, avg_.data());
  // The update works in double, so the default alpha = 1, mu = 0 gives Z' = A exactly and
  // the trajectories of plain model averaging do not depend on the elastic code path.
  centre_step(z_.data(), z_prev_.empty() ? nullptr : z_prev_.data(), avg_.data(), n_, alpha, mu);
  last_floats_ = n_;
  // beta = 1 is a restart: a broadcast (one device-side copy on GPUs) instead of a pull.
  if (beta >= 1.0) {
    comm.broadcast_params(live, z_.data());
    return;
  }
  tmp_.resize(static_cast<std::size_t>(n_));
  for (Device* d : live) {
    d->read_params(tmp_.data());
    pull_towards(tmp_.data(), z_.data(), n_, beta);
    d->write_params(tmp_.data());
  }
}

void Centre::merge_rows(Communicator& comm, const std::vector<Device*>& live,
                        const std::vector<double>& w, const ParamRows& rows, double alpha,
                        double beta, double mu) {
  const ParamLayout& layout = live[0]->layout();
  const bool has_history = !z_prev_.empty();
  ParamRows moved = ParamRows::none(rows.output_rows);
  ParamRows apart = ParamRows::none(rows.output_rows);
  const bool sole_replica = live.size() == 1 && w[0] == 1.0 && alpha == 1.0 && mu == 0.0;
  // alpha = 1 without history: Z' = A exactly (centre_step works in double), so the old rows
  // of Z need not be read, and A itself is the new centre's piece.
  const bool replace = alpha == 1.0 && mu == 0.0 && !has_history;
  if (replace && beta >= 1.0 && merge_in_place(live, w, rows, sole_replica)) {
    moving_ = ParamRows::none(rows.output_rows);
    divergent_ = ParamRows::none(rows.output_rows);
    last_floats_ = packed_size(layout, rows);
    return;
  }
  for (const ParamRows& piece : split_rows(layout, rows, kPieceFloats)) {
    const index_t m = packed_size(layout, piece);
    const auto sz = static_cast<std::size_t>(m);
    piece_avg_.resize(sz);
    comm.average_rows(live, w, piece, piece_avg_.data());
    if (replace) {
      piece_z_.swap(piece_avg_);
    } else {
      piece_z_.resize(sz);
      pack_rows(layout, piece, z_.data(), piece_z_.data());
      if (has_history) {
        piece_zp_.resize(sz);
        pack_rows(layout, piece, z_prev_.data(), piece_zp_.data());
      }
      centre_step(piece_z_.data(), has_history ? piece_zp_.data() : nullptr, piece_avg_.data(), m,
                  alpha, mu);
    }
    unpack_rows(layout, piece, piece_z_.data(), z_.data());
    if (has_history) {
      unpack_rows(layout, piece, piece_zp_.data(), z_prev_.data());
      // Z_prev now holds the old Z: the rows where they differ keep moving under momentum.
      if (mu != 0.0) add_moved_rows(layout, piece, piece_z_.data(), piece_zp_.data(), &moved);
    }
    if (beta >= 1.0) {
      // One replica with weight 1, alpha = 1 and mu = 0: Z' = A = that replica's rows
      // exactly (the update is in double), so writing them back would change nothing.
      if (!sole_replica) comm.broadcast_rows(live, piece, piece_z_.data());
      continue;
    }
    piece_w_.resize(sz);
    for (Device* d : live) {
      d->read_rows(piece, piece_w_.data());
      pull_towards(piece_w_.data(), piece_z_.data(), m, beta);
      d->write_rows(piece, piece_w_.data());
      // The rows where this replica still differs from Z stay in D.
      add_moved_rows(layout, piece, piece_w_.data(), piece_z_.data(), &apart);
    }
  }
  moving_ = mu != 0.0 ? std::move(moved) : ParamRows::none(rows.output_rows);
  normalise(&apart);
  divergent_ = std::move(apart);
  last_floats_ = packed_size(layout, rows);
}

bool Centre::merge_in_place(const std::vector<Device*>& live, const std::vector<double>& w,
                            const ParamRows& rows, bool sole_replica) {
  std::vector<float*> params;
  for (Device* d : live) {
    params.push_back(d->host_params());
    if (params.back() == nullptr) return false;
  }
  // The replicas are idle and in this process's memory: the average goes straight into Z and
  // back into them, one read and one write per replica and parameter, where staging through
  // read_rows/write_rows packs, sums, unpacks and scatters through buffers (at 670,091 labels
  // about half of a merge's time).
  average_rows_in_place(live[0]->layout(), rows, params, w, z_.data(), sole_replica);
  if (!sole_replica) {
    for (Device* d : live) d->host_params_written();
  }
  return true;
}

void Centre::easgd_exchange(Communicator& comm, const std::vector<Device*>& live, double a) {
  const double k = static_cast<double>(live.size());
  const std::vector<double> uniform(live.size(), 1.0 / k);
  avg_.resize(static_cast<std::size_t>(n_));
  tmp_.resize(avg_.size());
  comm.average_params(live, uniform, avg_.data());
  // Z + a sum_i (W_i - Z) = Z + (a K) (mean W - Z): the elastic update with alpha = a K, and
  // Z_prev keeps the old centre that every replica is pulled towards.
  z_prev_ = z_;
  update_centre(z_.data(), tmp_.data(), avg_.data(), n_, a * k, 0.0);
  for (Device* d : live) {
    d->read_params(tmp_.data());
    pull_towards(tmp_.data(), z_prev_.data(), n_, a);
    d->write_params(tmp_.data());
  }
  rows_known_ = false;
}

void Centre::refresh_from(Device& device) {
  device.read_params(z_.data());
  std::vector<float>().swap(z_prev_);  // Z_prev = Z
  rows_known_ = false;
}

void Centre::update_average(double decay) {
  if (average_.empty()) {
    average_ = z_;
    return;
  }
  const float d = static_cast<float>(decay), e = static_cast<float>(1.0 - decay);
  for (std::size_t i = 0; i < average_.size(); ++i) average_[i] = d * average_[i] + e * z_[i];
}

void Centre::swap_in(Device& device) {
  tmp_.resize(static_cast<std::size_t>(n_));
  device.read_params(tmp_.data());
  device.write_params(evaluated().data());
}

void Centre::swap_out(Device& device) { device.write_params(tmp_.data()); }

void Centre::release() {
  for (std::vector<float>* v : {&z_, &z_prev_, &avg_, &tmp_, &average_})
    std::vector<float>().swap(*v);
  rows_known_ = false;
}

}  // namespace hetsgd
