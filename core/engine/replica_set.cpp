#include "core/engine/replica_set.h"

#include <algorithm>
#include <exception>
#include <sstream>

#include "core/error.h"

namespace hetsgd {
namespace {

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

ReplicaSet::ReplicaSet(const std::vector<Device*>& devices) : devices_(devices) {
  HETSGD_CHECK(!devices_.empty(), "train: no devices");
  for (Device* d : devices_) HETSGD_CHECK(d != nullptr, "train: null device");
  param_count_ = devices_[0]->layout().total();
  for (Device* d : devices_) {
    HETSGD_CHECK(d->layout().total() == param_count_,
                 "train: device " << d->name() << " holds " << d->layout().total()
                                  << " parameters, " << devices_[0]->name() << " holds "
                                  << param_count_);
  }
  const std::size_t k = devices_.size();
  alive_.assign(k, true);
  failure_.assign(k, std::string());
  updates_.assign(k, 0);
  samples_.assign(k, 0);
  busy_.assign(k, 0.0);
  scratch_.resize(k);
  for (std::size_t i = 0; i < k; ++i) workers_.push_back(std::make_unique<DeviceWorker>());
}

int ReplicaSet::num_alive() const {
  return static_cast<int>(std::count(alive_.begin(), alive_.end(), true));
}

std::vector<Device*> ReplicaSet::alive_devices() const {
  std::vector<Device*> out;
  for (int i = 0; i < size(); ++i) {
    if (alive(i)) out.push_back(devices_[static_cast<std::size_t>(i)]);
  }
  return out;
}

void ReplicaSet::run_on_alive(const std::function<void(int)>& task) {
  for (int i = 0; i < size(); ++i) {
    if (alive(i)) workers_[static_cast<std::size_t>(i)]->post([&task, i] { task(i); });
  }
  // Every posted task is waited for before any failure is acted on: no worker may still be
  // touching shared state when the caller continues.
  for (int i = 0; i < size(); ++i) {
    if (!alive(i)) continue;
    const std::exception_ptr e = workers_[static_cast<std::size_t>(i)]->wait();
    if (e) mark_failed(i, describe(e));
  }
  check_survivors();
}

// One slot's worker only: evaluation runs on the fastest device while the others stay idle,
// and a failure there removes the device exactly like a failed training step.
bool ReplicaSet::run_on(int slot, const std::function<void()>& task) {
  DeviceWorker& w = *workers_[static_cast<std::size_t>(slot)];
  w.post(task);
  const std::exception_ptr e = w.wait();
  if (!e) return true;
  mark_failed(slot, describe(e));
  check_survivors();
  return false;
}

void ReplicaSet::begin_round() {
  for (SlotScratch& s : scratch_) {
    s.stats = DeviceRoundStats{};
    s.loss_sum = 0.0;
  }
}

void ReplicaSet::end_round() {
  for (std::size_t i = 0; i < scratch_.size(); ++i) {
    updates_[i] += scratch_[i].stats.updates;
    samples_[i] += scratch_[i].stats.samples;
    busy_[i] += scratch_[i].stats.busy_s;
  }
}

void ReplicaSet::restore(int slot, const SlotState& saved) {
  const auto i = static_cast<std::size_t>(slot);
  alive_[i] = saved.alive;
  failure_[i] = saved.failure;
  updates_[i] = saved.updates;
  samples_[i] = saved.samples;
}

void ReplicaSet::mark_failed(int slot, const std::string& what) {
  alive_[static_cast<std::size_t>(slot)] = false;
  failure_[static_cast<std::size_t>(slot)] = what;
}

void ReplicaSet::check_survivors() const {
  if (num_alive() > 0) return;
  std::ostringstream os;
  os << "every device failed:";
  for (int i = 0; i < size(); ++i) os << "\n  " << device(i).id().str() << ": " << failure(i);
  throw Error(os.str());
}

}  // namespace hetsgd
