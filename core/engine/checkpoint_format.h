/// \file core/engine/checkpoint_format.h
/// The header of a checkpoint file (core/engine/checkpoint.h describes the layout): shared by
/// the writer (checkpoint.cpp) and the reader (checkpoint_read.cpp). Internal to the engine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/engine/train_state.h"

namespace hetsgd {
namespace checkpoint_format {

inline constexpr char kMagic[8] = {'H', 'S', 'G', 'D', 'C', 'K', 'P', 'T'};
inline constexpr std::size_t kHeaderBytes =
    sizeof kMagic + sizeof(std::uint32_t) + 2 * sizeof(std::uint64_t);

// The payload's plain fields in file order, each with the name the reader's errors give it.
// The writer (`io.field(value, name)` appends) and the reader (`io.field(value, name)` fills
// in) walk these same lists, so the two sides cannot drift apart. `State` is TrainState or
// const TrainState. The buffers and slots between the lists are written and read by hand:
// the writer may stream them and the reader bounds the slot count.

/// Before the centre: options, parameter count, model shape, optimiser.
template <class Io, class State>
void head_fields(Io& io, State& s) {
  io.field(s.options_text, "options");
  io.field(s.param_count, "param_count");
  io.field(s.model_shape, "model shape");
  io.field(s.optimizer, "optimizer");
}

/// After the centres: the shared cursor and the batch policy's warm-up flag.
template <class Io, class State>
void cursor_fields(Io& io, State& s) {
  io.field(s.cursor.seed, "cursor seed");
  io.field(s.cursor.num_points, "cursor points");
  io.field(s.cursor.epoch, "cursor epoch");
  io.field(s.cursor.position, "cursor position");
  io.field(s.cursor.consumed, "cursor consumed");
  io.field(s.cursor.permutation, "cursor permutation");
  io.field(s.cursor.requeued, "cursor requeued");
  io.field(s.past_warmup, "past warm-up");
}

/// After the slots: progress, timing and model selection, up to the best centre.
template <class Io, class State>
void progress_fields(Io& io, State& s) {
  io.field(s.round, "round");
  io.field(s.train_seconds, "training seconds");
  io.field(s.eval_seconds, "evaluation seconds");
  io.field(s.evaluations, "evaluations");
  io.field(s.best_p1, "best P@1");
  io.field(s.time_to_target_s, "time to target");
  io.field(s.target_reached, "target reached");
  io.field(s.loss_since_eval, "loss since evaluation");
  io.field(s.points_since_eval, "points since evaluation");
  io.field(s.has_best, "has best");
  io.field(s.best_val, "best validation metrics");
  io.field(s.best_test, "best test metrics");
  io.field(s.best_round, "best round");
  io.field(s.evals_since_best, "evaluations since best");
}

}  // namespace checkpoint_format
}  // namespace hetsgd
