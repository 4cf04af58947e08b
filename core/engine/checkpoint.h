/// \file core/engine/checkpoint.h
/// Checkpoint files: a TrainState serialised (core/engine/README.md).
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
#include <functional>
#include <string>
#include <vector>

#include "core/engine/train_state.h"
#include "core/model_config.h"

namespace hetsgd {

/// Current checkpoint format version (2: TrainState with per-slot optimiser state; 3: the
/// output layer's parameters and optimiser state stored by label, as ParamLayout does; 4: the
/// best model's metrics with recall@k and the propensity-scored metrics of core/metrics.h; 5:
/// the model's shape and optimiser, and every slot's rank, so that each node of a run across
/// servers restores its own devices).
inline constexpr std::uint32_t kCheckpointVersion = 5;

/// A float buffer that a checkpoint takes from its owner as it is written, instead of from a
/// copy in the TrainState: `floats` floats, handed out in order by `stream`.
struct StreamedFloats {
  std::uint64_t floats = 0;
  std::function<void(const FloatSink&)> stream;  ///< null: the state's own buffer is written
  /// `v` as it is (it must outlive the write).
  static StreamedFloats of(const std::vector<float>& v);
};

/// A slot's buffers taken from its device (a null stream: the slot's own).
struct SlotSources {
  OptimizerStream optimizer;  ///< replaces SlotState::optimizer
  StreamedFloats replica;     ///< replaces SlotState::replica
};

/// The model-sized buffers of a checkpoint, taken from their owners (the centre, the devices,
/// the best model's file) while it is written: the engine's checkpoints then hold no copy of
/// them. A field with a stream replaces the state's, which may be left empty.
struct CheckpointSources {
  StreamedFloats centre, previous_centre, best_centre, average;
  std::vector<SlotSources> slots;  ///< empty, or one per slot of the state
};

/// Writes `state` to `path` atomically (temporary file + rename). Throws IoError.
void save_checkpoint(const std::string& path, const TrainState& state);
/// The same file, with the buffers that `sources` streams in place of the state's.
void save_checkpoint(const std::string& path, const TrainState& state,
                     const CheckpointSources& sources);

/// Reads and verifies a checkpoint. Throws IoError (missing or non-regular file, bad magic,
/// unsupported version, truncation, checksum mismatch, a field out of range), naming the file.
TrainState load_checkpoint(const std::string& path);

/// A model's layer widths as a checkpoint records them ("1836-256-159": features, hidden
/// layers, labels): two models of one parameter count can differ in shape.
std::string model_shape_text(const ModelConfig& config);

/// Slots as bytes (the checkpoint's encoding), for the nodes of a run across servers to send
/// theirs to rank 0, and back. decode_slots() throws IoError naming `what`.
std::string encode_slots(const std::vector<SlotState>& slots);
std::vector<SlotState> decode_slots(const std::string& bytes, const std::string& what);

/// The checks load_checkpoint() applies to a decoded state (also used on states handed to
/// train() in memory). Throws IoError prefixed with `what` (a file name or "train state").
void validate_train_state(const TrainState& state, const std::string& what);

}  // namespace hetsgd
