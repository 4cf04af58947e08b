#include "core/engine/centre.h"

#include <cstring>

#include "core/engine/merge_weights.h"

namespace hetsgd {

Centre::Centre(index_t param_count)
    : n_(param_count),
      z_(static_cast<std::size_t>(param_count)),
      z_prev_(z_.size()),
      avg_(z_.size()),
      tmp_(z_.size()) {}

void Centre::start_from(Device& device) {
  device.read_params(z_.data());
  z_prev_ = z_;
}

void Centre::broadcast(Communicator& comm, const std::vector<Device*>& devices) const {
  comm.broadcast_params(devices, z_.data());
}

void Centre::merge(Communicator& comm, const std::vector<Device*>& live,
                   const std::vector<double>& w, double alpha, double beta, double mu) {
  if (std::strcmp(comm.name(), "host") != 0) {
    // A device communicator (NCCL, one shared GPU) averages, updates the centre and restarts
    // or pulls the replicas where they live: per round the host sends Z in and reads Z back,
    // two model copies, instead of staging every replica through host memory.
    comm.set_centre(z_.data(), z_prev_.data(), n_);
    comm.merge_centre(live, w, alpha, mu, beta);
    comm.read_centre(z_.data(), z_prev_.data());
    return;
  }
  comm.average_params(live, w, avg_.data());
  // update_centre works in double, so the default alpha = 1, mu = 0 gives Z' = A exactly and
  // the trajectories of plain model averaging do not depend on the elastic code path.
  update_centre(z_.data(), z_prev_.data(), avg_.data(), n_, alpha, mu);
  // beta = 1 is a restart: a broadcast (one device-side copy on GPUs) instead of a pull.
  if (beta >= 1.0) {
    comm.broadcast_params(live, z_.data());
    return;
  }
  for (Device* d : live) {
    d->read_params(tmp_.data());
    pull_towards(tmp_.data(), z_.data(), n_, beta);
    d->write_params(tmp_.data());
  }
}

void Centre::easgd_exchange(Communicator& comm, const std::vector<Device*>& live, double a) {
  const double k = static_cast<double>(live.size());
  const std::vector<double> uniform(live.size(), 1.0 / k);
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
}

void Centre::refresh_from(Device& device) {
  device.read_params(z_.data());
  z_prev_ = z_;
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
  device.read_params(tmp_.data());
  device.write_params(evaluated().data());
}

void Centre::swap_out(Device& device) { device.write_params(tmp_.data()); }

}  // namespace hetsgd
