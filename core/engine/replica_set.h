/// \file core/engine/replica_set.h
/// The devices of one run, their worker threads, and which of them are still alive
/// (core/engine/README.md, elasticity).
///
/// Slot i is devices[i] for the whole run. Work goes to the devices through run_on_alive():
/// every alive slot's task runs on that slot's own DeviceWorker thread, concurrently; a task
/// that throws takes its slot out (alive = false, failure kept) and the others carry on. Only
/// when no slot is left does the set throw hetsgd::Error listing every device's message.
///
/// Threads: every method is called from the scheduler thread. A task posted to slot i may use
/// slot i's device and scratch only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/device_round_stats.h"
#include "core/engine/device_worker.h"
#include "core/engine/train_state.h"

namespace hetsgd {

/// Per-slot buffers a worker owns during a round: its batch, index buffer and counters.
struct SlotScratch {
  std::vector<index_t> rows;  ///< point indices of the current batch
  CsrBatch batch;             ///< the gathered batch
  DeviceRoundStats stats;     ///< this round's counters
  double loss_sum = 0.0;      ///< sum of batch-mean losses weighted by batch rows
};

/// The devices of a run with their workers, liveness and totals.
class ReplicaSet {
 public:
  /// Non-owning: the devices must outlive the set. Throws InvalidArgument when empty, a
  /// device is null, or the devices hold differently sized models.
  explicit ReplicaSet(const std::vector<Device*>& devices);

  /// K, the number of slots (alive or not).
  int size() const { return static_cast<int>(devices_.size()); }
  /// The device of `slot`.
  Device& device(int slot) const { return *devices_[static_cast<std::size_t>(slot)]; }
  /// layout().total() of the model every device holds.
  index_t param_count() const { return param_count_; }
  /// Whether `slot` still trains.
  bool alive(int slot) const { return alive_[static_cast<std::size_t>(slot)]; }
  /// alive() of every slot.
  const std::vector<bool>& alive_mask() const { return alive_; }
  /// Number of alive slots.
  int num_alive() const;
  /// The alive slots' devices, in slot order.
  std::vector<Device*> alive_devices() const;
  /// what() of the failure that removed `slot` ("" while alive).
  const std::string& failure(int slot) const { return failure_[static_cast<std::size_t>(slot)]; }

  /// Runs `task(slot)` on the worker of every alive slot concurrently, waits for all, and
  /// removes the slots whose task threw. Throws Error when none is left.
  void run_on_alive(const std::function<void(int slot)>& task);
  /// Runs `task` on `slot`'s worker and waits. Returns false (and removes the slot) when it
  /// threw; throws Error when that was the last slot.
  bool run_on(int slot, const std::function<void()>& task);

  /// The scratch of `slot` (its worker's during a round).
  SlotScratch& scratch(int slot) { return scratch_[static_cast<std::size_t>(slot)]; }
  /// Clears every slot's round counters.
  void begin_round();
  /// Adds this round's counters to the per-slot totals.
  void end_round();
  /// Total updates / points of `slot` over the run (resumed totals included).
  index_t total_updates(int slot) const { return updates_[static_cast<std::size_t>(slot)]; }
  index_t total_samples(int slot) const { return samples_[static_cast<std::size_t>(slot)]; }
  /// Seconds `slot` was busy in this run (resumed runs not included).
  double total_busy(int slot) const { return busy_[static_cast<std::size_t>(slot)]; }
  /// Cumulative updates of every slot.
  const std::vector<index_t>& all_updates() const { return updates_; }

  /// Restores liveness and totals of `slot` from a saved slot.
  void restore(int slot, const SlotState& saved);

 private:
  void mark_failed(int slot, const std::string& what);
  void check_survivors() const;

  std::vector<Device*> devices_;
  index_t param_count_ = 0;
  std::vector<bool> alive_;
  std::vector<std::string> failure_;
  std::vector<index_t> updates_, samples_;
  std::vector<double> busy_;
  std::vector<SlotScratch> scratch_;
  std::vector<std::unique_ptr<DeviceWorker>> workers_;
};

}  // namespace hetsgd
