#include "core/engine/host_centre_store.h"

#include <tbb/parallel_for.h>

#include <utility>
#include <vector>

#include "core/engine/merge_weights.h"
#include "core/math/centre_update.h"
#include "core/param_rows.h"
#include "core/row_exchange.h"

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

namespace {

class HostCentreStore final : public CentreStore {
 public:
  HostCentreStore(Communicator& comm, index_t n) : comm_(comm), n_(n) {}

  void host_written() override { rows_known_ = false; }

  void replicas_hold_centre(const std::vector<Device*>& devices) override {
    for (Device* d : devices) {
      if (RowExchange* rx = d->row_exchange()) rx->clear_touched();
    }
    divergent_ = ParamRows::none(false);
    moving_ = ParamRows::none(false);  // Z_prev = Z
    rows_known_ = true;
  }

  void merge(const HostCentre& host, const std::vector<Device*>& live, const std::vector<double>& w,
             double alpha, double beta, double mu) override {
    const ParamRows rows = comm_.merges_rows() ? rows_to_merge(live, mu) : ParamRows::all();
    if (rows.everything) {
      merge_dense(host, live, w, alpha, beta, mu);
      // Every replica now equals Z, and Z_prev = Z on every row only without momentum.
      rows_known_ = beta >= 1.0 && mu == 0.0;
      divergent_ = ParamRows::none(false);
      moving_ = ParamRows::none(false);
    } else {
      // Sets D (empty after a restart) and M.
      merge_rows(host, live, w, rows, alpha, beta, mu);
      rows_known_ = true;
    }
    for (Device* d : live) {
      if (RowExchange* rx = d->row_exchange()) rx->clear_touched();
    }
  }

  void read_back(const HostCentre&) override {}  // the host copy is the centre
  index_t last_merge_floats() const override { return last_floats_; }

 private:
  // The dense merge (some replica cannot list its rows).
  void merge_dense(const HostCentre& host, const std::vector<Device*>& live,
                   const std::vector<double>& w, double alpha, double beta, double mu);
  // The restart merge with Z' = A of merge_rows() done in the replicas' host memory (every
  // live device exposes RowExchange::host_params()); false, with nothing done, otherwise.
  bool merge_in_place(float* z, const std::vector<Device*>& live, const std::vector<double>& w,
                      const ParamRows& rows, bool sole_replica);
  // The merge of `rows` only, piece by piece; records the rows Z moved in moving_ (mu != 0).
  void merge_rows(const HostCentre& host, const std::vector<Device*>& live,
                  const std::vector<double>& w, const ParamRows& rows, double alpha, double beta,
                  double mu);
  // The rows a merge over `live` must move: all() when dense.
  ParamRows rows_to_merge(const std::vector<Device*>& live, double mu) const;

  Communicator& comm_;
  index_t n_;
  std::vector<float> avg_, tmp_;
  bool rows_known_ = false;                       // the invariant of the file comment holds
  ParamRows divergent_ = ParamRows::none(false);  // D
  ParamRows moving_ = ParamRows::none(false);     // M
  index_t last_floats_ = 0;
  // One piece of a row merge: average, centre, history, replica.
  std::vector<float> piece_avg_, piece_z_, piece_zp_, piece_w_;
};

ParamRows HostCentreStore::rows_to_merge(const std::vector<Device*>& live, double mu) const {
  ParamRows u = ParamRows::none(false);
  for (std::size_t i = 0; i < live.size(); ++i) {
    const RowExchange* rx = live[i]->row_exchange();
    if (rx == nullptr) return ParamRows::all();  // a dense device: a dense merge
    u = i == 0 ? rx->touched_since_sync() : unite(u, rx->touched_since_sync());
    if (u.everything) return u;
  }
  if (u.everything) return u;
  if (!rows_known_) return ParamRows::every_row(live[0]->layout(), u.output_rows);
  if (!divergent_.empty()) u = unite(u, divergent_);
  if (mu != 0.0 && !moving_.empty()) u = unite(u, moving_);
  u.dense = true;  // b0 and the hidden layers change at every step (and with momentum)
  return u;
}

void HostCentreStore::merge_dense(const HostCentre& host, const std::vector<Device*>& live,
                                  const std::vector<double>& w, double alpha, double beta,
                                  double mu) {
  std::vector<float>& z = *host.z;
  std::vector<float>& z_prev = *host.z_prev;
  avg_.resize(static_cast<std::size_t>(n_));
  comm_.average_params(live, w, avg_.data());
  // The update works in double, so the default alpha = 1, mu = 0 gives Z' = A exactly and
  // the trajectories of plain model averaging do not depend on the elastic code path.
  centre_step(z.data(), z_prev.empty() ? nullptr : z_prev.data(), avg_.data(), n_, alpha, mu);
  last_floats_ = n_;
  // beta = 1 is a restart: a broadcast (one device-side copy on GPUs) instead of a pull.
  if (beta >= 1.0) {
    comm_.broadcast_params(live, z.data());
    return;
  }
  tmp_.resize(static_cast<std::size_t>(n_));
  for (Device* d : live) {
    d->read_params(tmp_.data());
    pull_towards(tmp_.data(), z.data(), n_, beta);
    d->write_params(tmp_.data());
  }
}

void HostCentreStore::merge_rows(const HostCentre& host, const std::vector<Device*>& live,
                                 const std::vector<double>& w, const ParamRows& rows, double alpha,
                                 double beta, double mu) {
  std::vector<float>& z = *host.z;
  std::vector<float>& z_prev = *host.z_prev;
  const ParamLayout& layout = live[0]->layout();
  const bool has_history = !z_prev.empty();
  ParamRows moved = ParamRows::none(rows.output_rows);
  ParamRows apart = ParamRows::none(rows.output_rows);
  const bool sole_replica = live.size() == 1 && w[0] == 1.0 && alpha == 1.0 && mu == 0.0;
  // alpha = 1 without history: Z' = A exactly (centre_step works in double), so the old rows
  // of Z need not be read, and A itself is the new centre's piece.
  const bool replace = alpha == 1.0 && mu == 0.0 && !has_history;
  if (replace && beta >= 1.0 && merge_in_place(z.data(), live, w, rows, sole_replica)) {
    moving_ = ParamRows::none(rows.output_rows);
    divergent_ = ParamRows::none(rows.output_rows);
    last_floats_ = packed_size(layout, rows);
    return;
  }
  for (const ParamRows& piece : split_rows(layout, rows, kPieceFloats)) {
    const index_t m = packed_size(layout, piece);
    const auto sz = static_cast<std::size_t>(m);
    piece_avg_.resize(sz);
    comm_.average_rows(live, w, piece, piece_avg_.data());
    if (replace) {
      piece_z_.swap(piece_avg_);
    } else {
      piece_z_.resize(sz);
      pack_rows(layout, piece, z.data(), piece_z_.data());
      if (has_history) {
        piece_zp_.resize(sz);
        pack_rows(layout, piece, z_prev.data(), piece_zp_.data());
      }
      centre_step(piece_z_.data(), has_history ? piece_zp_.data() : nullptr, piece_avg_.data(), m,
                  alpha, mu);
    }
    unpack_rows(layout, piece, piece_z_.data(), z.data());
    if (has_history) {
      unpack_rows(layout, piece, piece_zp_.data(), z_prev.data());
      // Z_prev now holds the old Z: the rows where they differ keep moving under momentum.
      if (mu != 0.0) add_moved_rows(layout, piece, piece_z_.data(), piece_zp_.data(), &moved);
    }
    if (beta >= 1.0) {
      // One replica with weight 1, alpha = 1 and mu = 0: Z' = A = that replica's rows
      // exactly (the update is in double), so writing them back would change nothing.
      if (!sole_replica) comm_.broadcast_rows(live, piece, piece_z_.data());
      continue;
    }
    piece_w_.resize(sz);
    for (Device* d : live) {
      RowExchange& rx = *d->row_exchange();
      rx.read_rows(piece, piece_w_.data());
      pull_towards(piece_w_.data(), piece_z_.data(), m, beta);
      rx.write_rows(piece, piece_w_.data());
      // The rows where this replica still differs from Z stay in D.
      add_moved_rows(layout, piece, piece_w_.data(), piece_z_.data(), &apart);
    }
  }
  moving_ = mu != 0.0 ? std::move(moved) : ParamRows::none(rows.output_rows);
  normalise(&apart);
  divergent_ = std::move(apart);
  last_floats_ = packed_size(layout, rows);
}

bool HostCentreStore::merge_in_place(float* z, const std::vector<Device*>& live,
                                     const std::vector<double>& w, const ParamRows& rows,
                                     bool sole_replica) {
  std::vector<float*> params;
  for (Device* d : live) {
    params.push_back(d->row_exchange()->host_params());
    if (params.back() == nullptr) return false;
  }
  // The replicas are idle and in this process's memory: the average goes straight into Z and
  // back into them, one read and one write per replica and parameter, where staging through
  // read_rows/write_rows packs, sums, unpacks and scatters through buffers (at 670,091 labels
  // about half of a merge's time).
  average_rows_in_place(live[0]->layout(), rows, params, w, z, sole_replica);
  if (!sole_replica) {
    for (Device* d : live) d->row_exchange()->host_params_written();
  }
  return true;
}

}  // namespace

std::unique_ptr<CentreStore> make_host_centre_store(Communicator& comm, index_t param_count) {
  return std::make_unique<HostCentreStore>(comm, param_count);
}

}  // namespace hetsgd
