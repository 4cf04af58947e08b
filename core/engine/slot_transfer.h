/// \file core/engine/slot_transfer.h
/// Per-device state between a TrainState and a live run (core/engine/README.md).
///
/// Saved slots are matched to the run's devices by text id, each saved slot used once, so a
/// run on another device set (a tenant's job that was given other devices this round, a
/// resume on a changed machine) keeps what it knew about the devices it still has.
#pragma once

#include <vector>

#include "core/engine/batch_policy.h"
#include "core/engine/checkpoint.h"
#include "core/engine/replica_set.h"
#include "core/engine/round.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/engine/train_state.h"

namespace hetsgd {

/// Restores liveness, totals, batch size, throughput, optimiser state and (when saved) the
/// replica of every device with a matching slot in `state`. A device without one starts at
/// the sizer's start size, unmeasured, with the optimiser state of the first matched slot
/// (or fresh when nothing matched). Only the slots of `rank` are considered: across servers
/// each node restores its own devices, never another node's. Call after the centre was
/// broadcast.
void restore_slots(const TrainState& state, ReplicaSet& replicas, BatchSizer& sizer, int rank = 0);

/// The slots of a running set, in slot order. Alive devices are asked for their optimiser
/// state, and for their parameters when `round` says replicas differ from the centre.
/// With `buffers` false, slots keep their totals and batch sizes only (no optimiser state or
/// parameters).
std::vector<SlotState> capture_slots(ReplicaSet& replicas, const BatchSizer& sizer,
                                     const Round& round, const TrainOptions& options,
                                     bool buffers = true);

/// The buffers capture_slots() would copy, streamed from the devices instead (for a
/// checkpoint written while they are idle): per slot, the optimiser state of an alive device
/// (Device::stream_optimizer) and, when `round` says replicas differ from the centre, its
/// parameters (in place through RowExchange::host_params(), or one copy). Failed slots stream
/// nothing.
std::vector<SlotSources> stream_slots(ReplicaSet& replicas, const Round& round,
                                      const TrainOptions& options);

/// The per-device summary of a finished run (slot i is replicas' device i).
std::vector<DeviceSummary> device_summaries(const std::vector<SlotState>& slots,
                                            const ReplicaSet& replicas);

}  // namespace hetsgd
