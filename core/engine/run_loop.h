/// \file core/engine/run_loop.h
/// The run loop behind train() (core/engine/trainer.h): starts from a TrainState (or a fresh
/// model), runs rounds of the chosen algorithm until a stopping rule fires, evaluates every R
/// rounds, writes checkpoints, and hands the final state back. What a round does is the
/// algorithm's (round.h); what the devices are and whether they live is the ReplicaSet's; Z is
/// the Centre's; which rounds are evaluated and how the centre is scored is the
/// TrainingEvaluations' (training_evaluations.h). Internal to the engine: run_loop.cpp holds
/// the loop, its start and its stopping rules; run_loop_records.cpp the evaluation records,
/// snapshots, checkpoints and the result.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/batch_policy.h"
#include "core/engine/batch_source.h"
#include "core/engine/centre.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/node_group.h"
#include "core/engine/replica_set.h"
#include "core/engine/round.h"
#include "core/engine/selection.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/engine/train_state.h"
#include "core/engine/trainer.h"
#include "core/engine/training_evaluations.h"

namespace hetsgd {

class RunLoop {
 public:
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  RunLoop(const std::vector<Device*>& devices, Communicator& comm, const TrainData& data,
          const TrainOptions& options, const TrainCallbacks& callbacks);
  TrainResult run(TrainState initial);

 private:
  // ---------------------------------------------------------------- start and state
  void start_fresh();
  void restore(const TrainState& s);
  TrainState snapshot(bool buffers = true);
  TrainResult finish();
  // ---------------------------------------------------------------- clock and stopping
  double train_clock() const;
  index_t epoch_limit() const;
  bool interrupted() const { return cb_.stop != nullptr && cb_.stop->load(); }
  bool out_of_budget() const;
  bool should_stop(StopReason* why) const;
  // ---------------------------------------------------------------- rounds and records
  void run_round(RoundContext& ctx);
  void grow_round(RoundContext& ctx, double merge_s, double round_s);
  bool centre_is_replica() const;
  void refresh_centre_from_replica();
  /// `last`: no round follows and the centre is returned as evaluated; the selector then
  /// keeps no copy of a new best.
  void evaluate_centre(bool last = false);
  /// True when this rank evaluates and the run hands its centre back untouched after the loop
  /// (no checkpoint written from it, no state kept for a continuation).
  bool returns_centre() const;
  /// returns_centre(), and the run stops at this round boundary whatever the evaluation finds
  /// (a budget, an epoch or round limit, an interrupt).
  bool ends_here() const;
  void check_finite_centre(const char* when) const;
  void write_checkpoint();
  std::vector<SlotState> snapshot_slots_with_buffers();

  // ---------------------------------------------------------------- members
  TrainOptions opt_;
  const TrainCallbacks& cb_;
  const Dataset& train_;
  const Dataset& test_;
  const Dataset* val_;
  NodeGroup nodes_;
  std::unique_ptr<Communicator> cluster_comm_;  // across nodes only
  Communicator& comm_;
  ReplicaSet reps_;
  Centre centre_;
  BatchSizer sizer_;
  std::unique_ptr<Round> round_;
  std::unique_ptr<BatchSource> source_;
  LrScaling scaling_ = LrScaling::kLinear;
  index_t n_ = 0;  // N
  index_t s_ = 0;  // S
  TrainState st_;  // counters and clocks; centre, cursor and slots live in their owners
  ModelSelector selector_{opt_, &st_};
  double merge_s_ = 0.0, ckpt_s_ = 0.0;
  bool round_running_ = false;
  Clock::time_point round_start_;
  TrainResult result_;
  // Pacing and scoring of the evaluations (made in the constructor, after the checks).
  std::unique_ptr<TrainingEvaluations> evals_;
};

}  // namespace hetsgd
