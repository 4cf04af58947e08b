#include "core/engine/centre.h"

#include <utility>

#include "core/engine/host_centre_store.h"
#include "core/engine/merge_weights.h"
#include "core/resident.h"

namespace hetsgd {

Centre::Centre(index_t param_count, Communicator& comm)
    : n_(param_count), comm_(comm), store_(comm.make_centre_store()) {
  // Mapped in one call before the zeros are written (core/resident.h): written page by page,
  // a debian-deps model's 135 MB took a tenth of its run's page faults, on one core.
  resize_resident(&z_, static_cast<std::size_t>(param_count));
  if (store_ == nullptr) store_ = make_host_centre_store(comm, param_count);
}

void Centre::sync_host() const {
  if (!host_stale_) return;
  store_->read_back(host());
  host_stale_ = false;
}

void Centre::host_written() {
  sync_host();
  store_->host_written();
}

const std::vector<float>& Centre::z() const {
  sync_host();
  return z_;
}

const std::vector<float>& Centre::z_prev() const {
  sync_host();
  return z_prev_;
}

std::vector<float>& Centre::edit_z() {
  host_written();
  return z_;
}

std::vector<float>& Centre::edit_z_prev() {
  host_written();
  return z_prev_;
}

std::vector<float> Centre::take_z() {
  sync_host();
  std::vector<float> out = std::move(z_);
  z_.clear();
  store_->host_written();
  return out;
}

void Centre::start_from(Device& device) {
  host_written();
  device.read_params(z_.data());
  std::vector<float>().swap(z_prev_);  // Z_prev = Z
}

void Centre::broadcast(const std::vector<Device*>& devices) {
  comm_.broadcast_params(devices, z().data());
}

void Centre::start_replicas(const std::vector<Device*>& devices) {
  broadcast(devices);
  store_->replicas_hold_centre(devices);
}

void Centre::merge(const std::vector<Device*>& live, const std::vector<double>& w, double alpha,
                   double beta, double mu) {
  // The history is read only with block momentum; it starts as Z (history()). The store's
  // history is Z too until then (it takes Z for an empty host history).
  if (mu != 0.0 && z_prev_.empty()) {
    sync_host();
    z_prev_ = z_;
  }
  if (mu == 0.0) std::vector<float>().swap(z_prev_);
  store_->merge(host(), live, w, alpha, beta, mu);
  host_stale_ = true;
}

void Centre::easgd_exchange(const std::vector<Device*>& live, double a) {
  host_written();
  const double k = static_cast<double>(live.size());
  const std::vector<double> uniform(live.size(), 1.0 / k);
  avg_.resize(static_cast<std::size_t>(n_));
  tmp_.resize(avg_.size());
  comm_.average_params(live, uniform, avg_.data());
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
  host_written();
  device.read_params(z_.data());
  std::vector<float>().swap(z_prev_);  // Z_prev = Z
}

void Centre::update_average(double decay) {
  const std::vector<float>& z = this->z();
  if (average_.empty()) {
    average_ = z;
    return;
  }
  const float d = static_cast<float>(decay), e = static_cast<float>(1.0 - decay);
  for (std::size_t i = 0; i < average_.size(); ++i) average_[i] = d * average_[i] + e * z[i];
}

void Centre::swap_in(Device& device) {
  tmp_.resize(static_cast<std::size_t>(n_));
  device.read_params(tmp_.data());
  device.write_params(evaluated().data());
}

void Centre::swap_out(Device& device) { device.write_params(tmp_.data()); }

void Centre::release() {
  host_stale_ = false;
  for (std::vector<float>* v : {&z_, &z_prev_, &avg_, &tmp_, &average_}) {
    std::vector<float>().swap(*v);
  }
  store_->host_written();
}

}  // namespace hetsgd
