/// \file core/engine/checkpoint.h
/// Checkpoint files: a TrainState serialised (DESIGN §6).
///
/// File layout (little-endian, as written by this machine):
///   magic "HSGDCKPT" (8 bytes), format version (u32), payload size (u64),
///   FNV-1a 64 checksum of the payload (u64), payload.
/// The payload holds the fields of TrainState in declaration order (strings and vectors as a
/// u64 length then their elements; a SlotState field by field). Writes are atomic: a temporary
/// file next to the target is written, flushed and renamed over it, so a crash never leaves a
/// torn checkpoint.
///
/// Loading checks magic, version, size and checksum, then every field before it is used:
/// lengths against the bytes left (no allocation sized by the file beyond the file itself),
/// the cursor (permutation a permutation of [0, N), position and requeued ids within N,
/// counters non-negative), batch sizes >= 1, throughputs, times and parameters finite, buffer
/// sizes equal to param_count. Every problem is an IoError naming the file and the field.
#pragma once

#include <cstdint>
#include <string>

#include "core/engine/train_state.h"

namespace hetsgd {

/// Current checkpoint format version (2: TrainState with per-slot optimiser state).
inline constexpr std::uint32_t kCheckpointVersion = 2;

/// Writes `state` to `path` atomically (temporary file + rename). Throws IoError.
void save_checkpoint(const std::string& path, const TrainState& state);

/// Reads and verifies a checkpoint. Throws IoError (missing or non-regular file, bad magic,
/// unsupported version, truncation, checksum mismatch, a field out of range), naming the file.
TrainState load_checkpoint(const std::string& path);

/// The checks load_checkpoint() applies to a decoded state (also used on states handed to
/// train() in memory). Throws IoError prefixed with `what` (a file name or "train state").
void validate_train_state(const TrainState& state, const std::string& what);

}  // namespace hetsgd
