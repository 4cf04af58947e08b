// What the run loop reports and keeps: evaluations of the centre, the state a checkpoint or the
// next run continues from, checkpoint files, and the TrainResult at the end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "core/engine/checkpoint.h"
#include "core/engine/evaluation.h"
#include "core/engine/node_run.h"
#include "core/engine/run_checks.h"
#include "core/engine/run_loop.h"
#include "core/engine/slot_transfer.h"
#include "core/error.h"

namespace hetsgd {

// The state a checkpoint or the next run continues from. Without `buffers`
// (TrainOptions::keep_final_state false) only its counters, clocks and slot totals, for the
// report: no centre, moments, replicas or copy of the best model.
TrainState RunLoop::snapshot(bool buffers) {
  if (centre_is_replica()) refresh_centre_from_replica();
  std::vector<float> best = std::move(st_.best_centre);
  TrainState s = st_;
  st_.best_centre = std::move(best);
  if (buffers) s.best_centre = selector_.copy_model();
  s.options_text = opt_.trajectory_text();
  s.param_count = reps_.param_count();
  s.model_shape = model_shape_text(reps_.device(0).config());
  s.optimizer = to_string(reps_.device(0).config().optimizer.kind);
  if (buffers) {
    s.centre = centre_.z();
    s.previous_centre = centre_.z_prev();  // empty when no history is kept (Z_prev = Z)
    s.average = centre_.average();
  }
  s.cursor = source_->state();
  s.past_warmup = sizer_.past_warmup();
  s.best_p1 = result_.best_p1;
  s.time_to_target_s = result_.time_to_target_s;
  s.slots = capture_slots(reps_, sizer_, *round_, opt_, buffers);
  for (SlotState& slot : s.slots) slot.rank = nodes_.rank();
  return s;
}

TrainResult RunLoop::finish() {
  result_.state = snapshot(opt_.keep_final_state);
  result_.train_seconds = st_.train_seconds;
  result_.eval_seconds = st_.eval_seconds;
  result_.merge_seconds = merge_s_;
  result_.checkpoint_seconds = ckpt_s_;
  result_.samples = source_->consumed();
  result_.epochs = source_->epochs();
  result_.rounds_done = st_.round;
  result_.round_samples = s_;
  if (!result_.evals.empty()) result_.final_metrics = result_.evals.back().metrics;
  const bool best = st_.has_best && opt_.keep_best && selector_.has_model();
  if (best) {
    // The centre is not needed any more: free it before a best model in a file is read
    // back, so that the end of the run peaks no higher than the run did.
    if (!opt_.keep_final_state) centre_.release();
    result_.model = selector_.take_model();
  } else if (!opt_.keep_final_state && centre_.average().empty()) {
    result_.model = centre_.take_z();  // the selected model is Z: no copy
  } else {
    result_.model = centre_.evaluated();
  }
  // The run is over: move, do not copy.
  if (opt_.keep_final_state) result_.centre = centre_.take_z();
  result_.selected_round = st_.round;
  if (st_.has_best) {
    result_.has_val = true;
    result_.val_metrics = st_.best_val;
    result_.final_metrics = st_.best_test;
    result_.selected_round = st_.best_round;
  }
  // The report describes the model that is returned: without keep-best that is the last
  // evaluated centre, whose record is the last one (the loop ends with an evaluation).
  if (st_.has_best && !best && !result_.evals.empty()) {
    const EvalRecord& last = result_.evals.back();
    result_.val_metrics = last.val_metrics;
    result_.final_metrics = last.metrics;
    result_.selected_round = last.round;
  }
  evals_->evaluate_selected(reps_, sizer_.throughput(), nodes_.is_root(), &result_);
  result_.devices = gather_summaries(nodes_, device_summaries(result_.state.slots, reps_));
  result_.ranks = nodes_.size();
  return std::move(result_);
}

// Z lives in a replica (sync, or one device averaging with itself): read it from there
// before it is evaluated, saved or averaged.
bool RunLoop::centre_is_replica() const {
  return round_->centre_is_replica() || centre_follows_replica(opt_, reps_, nodes_);
}

void RunLoop::refresh_centre_from_replica() {
  for (int i = 0; i < reps_.size(); ++i) {
    if (reps_.alive(i)) {
      centre_.refresh_from(reps_.device(i));
      return;
    }
  }
}

void RunLoop::evaluate_centre(bool last) {
  if (!nodes_.is_root()) return;  // the other nodes wait at the next stop decision
  if (centre_is_replica()) refresh_centre_from_replica();
  check_finite_centre("evaluation");
  const auto t0 = Clock::now();
  const bool swap = !round_->replicas_hold_centre(opt_) || !centre_.average().empty();
  EvalRecord rec =
      evals_->score_centre(reps_, centre_, swap, sizer_.throughput(), selector_, st_.round, last);
  const double dt = seconds_since(t0);
  st_.eval_seconds += dt;
  ++st_.evaluations;
  rec.time_s = st_.train_seconds;
  rec.eval_s = dt;
  rec.eval_total_s = st_.eval_seconds;
  rec.epoch = source_->epochs();
  rec.round = st_.round;
  rec.samples = source_->consumed();
  rec.train_loss = st_.points_since_eval > 0
                       ? st_.loss_since_eval / static_cast<double>(st_.points_since_eval)
                       : 0.0;
  st_.loss_since_eval = 0.0;
  st_.points_since_eval = 0;
  rec.device_updates = reps_.all_updates();
  for (int i = 0; i < reps_.size(); ++i) {
    rec.device_batch.push_back(round_->batch_of(opt_, sizer_, i));
  }
  rec.devices_alive = reps_.num_alive();
  // The time to the target is a report, read off the test curve like every published
  // number; stopping there is a decision, so it reads the validation curve only: without
  // validation data the target is reported, never acted on.
  const double p1 = rec.metrics.p_at(1);
  result_.best_p1 = std::max(result_.best_p1, p1);
  if (opt_.target_p1 > 0.0 && p1 >= opt_.target_p1 && result_.time_to_target_s < 0.0) {
    result_.time_to_target_s = st_.train_seconds;
  }
  if (val_ != nullptr && opt_.target_p1 > 0.0 && rec.val_metrics.p_at(1) >= opt_.target_p1) {
    st_.target_reached = true;
  }
  if (cb_.on_eval) cb_.on_eval(rec);
  result_.evals.push_back(std::move(rec));
}

void RunLoop::check_finite_centre(const char* when) const {
  const index_t bad = first_non_finite(centre_.z());
  HETSGD_CHECK_NUMERIC(bad < 0, "round " << st_.round
                                         << ": the centre model holds a non-finite parameter "
                                            "(index "
                                         << bad << ") at " << when
                                         << "; the run stopped; lower --lr");
}

std::vector<SlotState> RunLoop::snapshot_slots_with_buffers() {
  std::vector<SlotState> slots = capture_slots(reps_, sizer_, *round_, opt_, true);
  for (SlotState& slot : slots) slot.rank = nodes_.rank();
  return slots;
}

namespace {

// The other nodes' slots, on rank 0, or why this checkpoint goes without them. Every rank
// enters the same collectives whatever fails, so the ranks agree on the outcome and training
// goes on without this checkpoint, as after a full disk: a rank that cannot encode its slots
// (out of memory) says so in one all-reduce before the gather; rank 0 that cannot hold them
// refuses inside it (GatherRefused, thrown on every rank). A failed transport (any other
// Error of the gather) is not caught: the ranks may then stand at different points of the
// protocol, so no collective can follow safely; the error ends the job on every rank
// (apps/main.cpp aborts it with the message) and the previous checkpoint stays intact.
// `mine`: this rank's encoded slots (none on rank 0); `no_memory`: they could not be encoded.
std::string gather_other_slots(NodeGroup& nodes, std::string mine, bool no_memory,
                               std::vector<SlotState>* others, std::int64_t* chunks) {
  std::int64_t failed = no_memory ? nodes.rank() + 1 : 0;  // 1 + the highest such rank
  nodes.cluster().allreduce_max(&failed, 1);
  if (failed > 0) {
    return "rank " + std::to_string(failed - 1) + " ran out of memory copying its device slots";
  }
  const std::int64_t before = nodes.cluster().gathered_chunks();
  std::vector<std::string> all;
  try {
    all = nodes.cluster().gather_to_root(mine);
  } catch (const GatherRefused& e) {
    return std::string("rank 0 cannot hold the other ranks' device slots: ") + e.what();
  }
  *chunks += nodes.cluster().gathered_chunks() - before;
  for (std::size_t r = 1; r < all.size(); ++r) {
    for (SlotState& slot : decode_slots(all[r], "slots of rank " + std::to_string(r))) {
      others->push_back(std::move(slot));
    }
    std::string().swap(all[r]);  // decoded: the bytes need not stay for the write
  }
  return std::string();
}

}  // namespace

void RunLoop::write_checkpoint() {
  const auto t0 = Clock::now();
  // The counters and cursor as a state (collective across nodes: the global cursor); the
  // model-sized buffers stream from the centre, the devices and the best model's file, so
  // a checkpoint holds no copy of them (at 670,091 labels that was 1.4 GB).
  TrainState s = snapshot(false);
  check_finite_centre("checkpoint");  // after snapshot(), which brings Z up to date
  // Across nodes the file holds every node's slots, so that each node resumes its own
  // devices: the other nodes send theirs (optimiser state and replicas included) to rank 0
  // alone, in bounded chunks.
  std::vector<SlotState> others;
  std::string skipped;  // why this checkpoint is not written (the same on every rank)
  if (nodes_.multi()) {
    std::string mine;
    bool no_memory = false;
    try {
      if (!nodes_.is_root()) mine = encode_slots(snapshot_slots_with_buffers());
    } catch (const std::bad_alloc&) {
      no_memory = true;
    }
    skipped =
        gather_other_slots(nodes_, std::move(mine), no_memory, &others, &result_.checkpoint_chunks);
  }
  if (nodes_.is_root() && !skipped.empty()) {
    ++result_.checkpoint_failures;
    std::cerr << "hetsgd: warning: checkpoint not written at round " << st_.round << ": " << skipped
              << "; training goes on\n";
  } else if (nodes_.is_root()) {
    CheckpointSources src;
    src.centre = StreamedFloats::of(centre_.z());
    src.previous_centre = StreamedFloats::of(centre_.z_prev());
    src.average = StreamedFloats::of(centre_.average());
    src.best_centre = selector_.stream_model();
    src.slots = stream_slots(reps_, *round_, opt_);
    src.slots.resize(src.slots.size() + others.size());  // their own buffers
    for (SlotState& slot : others) s.slots.push_back(std::move(slot));
    try {
      save_checkpoint(opt_.checkpoint_path, s, src);
    } catch (const IoError& e) {
      // A full disk must not cost the run: the previous checkpoint stays as it was (writes
      // are atomic), training goes on, and the model is still saved at the end.
      ++result_.checkpoint_failures;
      std::cerr << "hetsgd: warning: checkpoint not written at round " << st_.round << ": "
                << e.what() << "; training goes on\n";
    }
  }
  ckpt_s_ += seconds_since(t0);
}
}  // namespace hetsgd
