#include "core/engine/slot_transfer.h"

#include <memory>
#include <string>

#include "core/row_exchange.h"

namespace hetsgd {

void restore_slots(const TrainState& s, ReplicaSet& reps, BatchSizer& sizer, int rank) {
  std::vector<bool> used(s.slots.size(), false);
  const OptimizerState* fallback = nullptr;
  std::vector<int> fresh;
  for (int i = 0; i < reps.size(); ++i) {
    Device& d = reps.device(i);
    const std::string id = d.id().str();
    int match = -1;
    for (std::size_t j = 0; j < s.slots.size() && match < 0; ++j) {
      if (!used[j] && s.slots[j].rank == rank && s.slots[j].device == id) {
        match = static_cast<int>(j);
      }
    }
    if (match < 0) {
      sizer.restore_slot(i, sizer.start_size(s.past_warmup), 0.0);
      fresh.push_back(i);
      continue;
    }
    used[match] = true;
    const SlotState& saved = s.slots[match];
    reps.restore(i, saved);
    sizer.restore_slot(i, saved.batch_size, saved.throughput);
    // A failed slot saved no optimiser state; it does not train again.
    if (!saved.alive) continue;
    d.write_optimizer(saved.optimizer);
    if (!saved.replica.empty()) d.write_params(saved.replica.data());
    if (fallback == nullptr) fallback = &saved.optimizer;
  }
  // A new device joins with the optimiser statistics the job learnt elsewhere: its replica
  // restarts from the centre anyway, and fresh Adam moments would make its first steps the
  // largest of the run.
  for (int i : fresh) {
    if (fallback != nullptr) reps.device(i).write_optimizer(*fallback);
  }
}

std::vector<SlotState> capture_slots(ReplicaSet& reps, const BatchSizer& sizer, const Round& round,
                                     const TrainOptions& options, bool buffers) {
  std::vector<SlotState> out;
  const bool replicas_differ = !round.replicas_hold_centre(options);
  for (int i = 0; i < reps.size(); ++i) {
    SlotState slot;
    Device& d = reps.device(i);
    slot.device = d.id().str();
    slot.alive = reps.alive(i);
    slot.failure = reps.failure(i);
    slot.batch_size = round.batch_of(options, sizer, i);
    slot.throughput = sizer.throughput()[i];
    slot.updates = reps.total_updates(i);
    slot.samples = reps.total_samples(i);
    // A failed device may not answer: its slot keeps liveness and totals only.
    if (slot.alive && buffers) {
      slot.optimizer = d.read_optimizer();
      if (replicas_differ) {
        slot.replica.resize(static_cast<std::size_t>(reps.param_count()));
        d.read_params(slot.replica.data());
      }
    }
    out.push_back(std::move(slot));
  }
  return out;
}

std::vector<SlotSources> stream_slots(ReplicaSet& reps, const Round& round,
                                      const TrainOptions& options) {
  std::vector<SlotSources> out(static_cast<std::size_t>(reps.size()));
  const bool replicas_differ = !round.replicas_hold_centre(options);
  const auto n = static_cast<std::size_t>(reps.param_count());
  for (int i = 0; i < reps.size(); ++i) {
    if (!reps.alive(i)) continue;
    Device& d = reps.device(i);
    SlotSources& slot = out[static_cast<std::size_t>(i)];
    slot.optimizer = d.stream_optimizer();
    if (!replicas_differ) continue;
    slot.replica.floats = n;
    RowExchange* rx = d.row_exchange();
    if (const float* p = rx != nullptr ? rx->host_params() : nullptr) {
      slot.replica.stream = [p, n](const FloatSink& sink) { sink(p, n); };
    } else {
      auto copy = std::make_shared<std::vector<float>>(n);
      d.read_params(copy->data());
      slot.replica.stream = [copy](const FloatSink& sink) { sink(copy->data(), copy->size()); };
    }
  }
  return out;
}

std::vector<DeviceSummary> device_summaries(const std::vector<SlotState>& slots,
                                            const ReplicaSet& reps) {
  std::vector<DeviceSummary> out;
  for (const SlotState& slot : slots) {
    DeviceSummary s;
    const Device& d = reps.device(static_cast<int>(out.size()));
    s.name = d.name();
    s.id = d.id();
    s.alive = slot.alive;
    s.failure = slot.failure;
    s.updates = slot.updates;
    s.samples = slot.samples;
    s.batch_size = slot.batch_size;
    s.throughput = slot.throughput;
    s.busy_s = reps.total_busy(static_cast<int>(out.size()));
    out.push_back(s);
  }
  return out;
}

}  // namespace hetsgd
