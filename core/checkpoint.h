/// \file core/checkpoint.h
/// Training checkpoints: everything the engine needs to continue a run where it stopped.
///
/// File layout (little-endian, as written by this machine):
///   magic "HSGDCKPT" (8 bytes), format version (u32), payload size (u64),
///   FNV-1a 64 checksum of the payload (u64), payload.
/// The payload holds the fields of TrainCheckpoint in declaration order (strings and vectors
/// as a u64 length then their elements). Writes are atomic: a temporary file next to the
/// target is written, flushed and renamed over it, so a crash never leaves a torn checkpoint.
/// Loading checks magic, version, size and checksum and throws IoError naming the file and
/// what was wrong.
///
/// Not saved: each device's optimiser state (e.g. Adam moments) and, for EASGD or beta < 1,
/// the local replicas; on resume every replica restarts from the centre with a fresh optimiser.
/// With plain SGD and beta = 1 (replicas equal the centre after every merge) a resumed run
/// follows the uninterrupted trajectory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/batch_source.h"
#include "core/types.h"

namespace hetsgd {

/// Current checkpoint format version.
inline constexpr std::uint32_t kCheckpointVersion = 1;

/// The saved state of a training run.
struct TrainCheckpoint {
  std::string algo;                       ///< to_string(Algo) of the run
  std::string options_text;               ///< TrainOptions::trajectory_text() of the run
  std::uint64_t options_fingerprint = 0;  ///< FNV-1a of options_text
  index_t param_count = 0;                ///< layout().total() of the model
  std::vector<float> centre;              ///< Z (param_count floats)
  std::vector<float> previous_centre;     ///< Z_prev, for block momentum (param_count floats)
  std::vector<index_t> batch_sizes;       ///< b_i per device slot at save time
  std::vector<double> throughput;         ///< EMA r_i (points/s) per device slot
  std::vector<std::uint8_t> alive;        ///< 1 per slot still alive at save time
  bool past_warmup = false;               ///< the batch policy had started
  index_t round = 0;                      ///< rounds completed
  double train_seconds = 0.0;             ///< training wall time so far (evaluation excluded)
  double eval_seconds = 0.0;              ///< evaluation wall time so far
  index_t evaluations = 0;                ///< evaluations done so far
  double best_p1 = 0.0;                   ///< best P@1 seen so far
  double time_to_target_s = -1.0;  ///< training time at which the target was reached (-1: not)
  BatchSourceState cursor;         ///< shared cursor: seed, epoch, position, permutation
};

/// Writes `checkpoint` to `path` atomically (temporary file + rename). Throws IoError.
void save_checkpoint(const std::string& path, const TrainCheckpoint& checkpoint);

/// Reads and verifies a checkpoint. Throws IoError (missing file, bad magic, unsupported
/// version, truncation, checksum mismatch), naming the file.
TrainCheckpoint load_checkpoint(const std::string& path);

}  // namespace hetsgd
