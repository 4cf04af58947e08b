// The run loop: starts from a TrainState (or a fresh model), runs rounds of the chosen
// algorithm until a stopping rule fires, evaluates every R rounds, writes checkpoints, and
// hands the final state back. What a round does is the algorithm's (round.h); what the
// devices are and whether they live is the ReplicaSet's; Z is the Centre's.
#include "core/engine/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/engine/batch_policy.h"
#include "core/engine/batch_source.h"
#include "core/engine/centre.h"
#include "core/engine/checkpoint.h"
#include "core/engine/evaluation.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/node_run.h"
#include "core/engine/replica_set.h"
#include "core/engine/round.h"
#include "core/engine/run_checks.h"
#include "core/engine/selection.h"
#include "core/engine/slot_transfer.h"
#include "core/error.h"

namespace hetsgd {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class RunLoop {
 public:
  RunLoop(const std::vector<Device*>& devices, Communicator& comm, const TrainData& data,
          const TrainOptions& options, const TrainCallbacks& callbacks)
      : opt_(options),
        cb_(callbacks),
        train_(*data.train),
        test_(*data.test),
        val_(data.val),
        nodes_(data.cluster),
        cluster_comm_(make_node_communicator(nodes_, comm)),
        comm_(cluster_comm_ ? *cluster_comm_ : comm),
        reps_(devices),
        centre_(reps_.param_count(), comm_),
        sizer_(options, reps_.size()),
        round_(make_round(options.algo)) {
    opt_.validate();
    check_shapes(devices[0]->config(), train_, test_);
    if (val_ != nullptr) check_shapes(devices[0]->config(), train_, *val_);
    HETSGD_CHECK(val_ != nullptr || opt_.patience == 0,
                 "train: --patience needs validation data (the test set never drives a decision)");
    scaling_ = resolve_lr_scaling(opt_.lr_scaling, devices[0]->config().optimizer.kind);
    n_ = train_.rows();
    check_node_run(nodes_, opt_, train_, devices[0]->config(), reps_.param_count());
    // S counts the devices of every node: a round is one mega-batch of the whole job.
    s_ = resolve_round_samples(opt_, static_cast<int>(nodes_.sum(index_t{reps_.size()})), n_);
    r_ = resolve_eval_every(opt_, s_, n_);
    result_.algo = opt_.algo;
  }

  TrainResult run(TrainState initial) {
    if (initial.empty() && !opt_.resume_path.empty()) initial = load_checkpoint(opt_.resume_path);
    if (initial.empty()) {
      start_fresh();
    } else {
      restore(initial);
    }
    if (nodes_.multi() && draws_global_cursor(opt_.algo)) source_->share(nodes_.cluster());
    std::function<bool()> budget = [this] { return out_of_budget(); };
    RoundContext ctx{opt_,   train_,   reps_, centre_, comm_,         *source_,         nodes_,
                     sizer_, scaling_, n_,    s_,      epoch_limit(), std::move(budget)};
    if (opt_.eval_at_start && st_.round == 0 && !result_.resumed) evaluate_centre();
    bool evaluated_last = true;
    for (;;) {
      // Rank 0 decides (it alone evaluates and keeps the clock); an interrupt anywhere stops all.
      StopReason why;
      const int code = nodes_.agree_stop(should_stop(&why) ? static_cast<int>(why) : -1,
                                         interrupted(), static_cast<int>(StopReason::kInterrupted));
      if (code >= 0) {
        result_.stop = static_cast<StopReason>(code);
        break;
      }
      run_round(ctx);
      evaluated_last = false;
      if (st_.round % r_ == 0) {
        evaluate_centre();
        evaluated_last = true;
      }
      if (!opt_.checkpoint_path.empty() && opt_.checkpoint_every_rounds > 0 &&
          st_.round % opt_.checkpoint_every_rounds == 0) {
        write_checkpoint();
      }
    }
    if (!evaluated_last || result_.evals.empty()) evaluate_centre();
    if (!opt_.checkpoint_path.empty()) write_checkpoint();
    return finish();
  }

 private:
  // ---------------------------------------------------------------- start and state
  void start_fresh() {
    source_ = std::make_unique<BatchSource>(n_, opt_.seed);
    centre_.start_from(reps_.device(0));
    if (nodes_.multi()) {
      // Every node starts from rank 0's model, whatever its devices initialised (Z_prev = Z:
      // start_from keeps no separate history).
      std::vector<float>& z = centre_.edit_z();
      nodes_.cluster().broadcast(z.data(), z.size() * sizeof(float), 0);
    }
    centre_.start_replicas(reps_.alive_devices());
  }

  void restore(const TrainState& s) {
    const std::string mine = opt_.trajectory_text();
    const std::string from = opt_.resume_path.empty() ? "train state" : opt_.resume_path;
    HETSGD_CHECK(s.options_text == mine, from << ": was written with other options\n  saved: "
                                              << s.options_text << "\n  now:   " << mine);
    HETSGD_CHECK(s.param_count == reps_.param_count(), from << ": holds " << s.param_count
                                                            << " parameters, the model "
                                                            << reps_.param_count());
    HETSGD_CHECK(s.cursor.num_points == n_,
                 from << ": was trained on " << s.cursor.num_points << " points, not " << n_);
    validate_train_state(s, from);
    st_ = s;
    // Rebuilt from the devices at the end; the model-sized buffers live in centre_ from here
    // on, and a second copy in st_ would be held for the whole run.
    st_.slots.clear();
    std::vector<float>().swap(st_.centre);
    std::vector<float>().swap(st_.previous_centre);
    std::vector<float>().swap(st_.average);
    source_ = std::make_unique<BatchSource>(s.cursor);
    centre_.edit_z() = s.centre;
    centre_.edit_z_prev() = s.previous_centre;
    centre_.average() = s.average;
    sizer_.set_past_warmup(s.past_warmup);
    result_.best_p1 = s.best_p1;
    result_.time_to_target_s = s.time_to_target_s;
    result_.resumed = true;
    centre_.broadcast(reps_.alive_devices());
    restore_slots(s, reps_, sizer_);
    selector_.adopt_state();  // before the replicas fill up: the best model goes to its file
  }

  // The state a checkpoint or the next run continues from. Without `buffers`
  // (TrainOptions::keep_final_state false) only its counters, clocks and slot totals, for the
  // report: no centre, moments, replicas or copy of the best model.
  TrainState snapshot(bool buffers = true) {
    if (centre_is_replica()) refresh_centre_from_replica();
    std::vector<float> best = std::move(st_.best_centre);
    TrainState s = st_;
    st_.best_centre = std::move(best);
    if (buffers) s.best_centre = selector_.copy_model();
    s.options_text = opt_.trajectory_text();
    s.param_count = reps_.param_count();
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
    return s;
  }

  TrainResult finish() {
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
    result_.devices = gather_summaries(nodes_, device_summaries(result_.state.slots, reps_));
    result_.ranks = nodes_.size();
    return std::move(result_);
  }

  // ---------------------------------------------------------------- clock and stopping
  double train_clock() const {
    return round_running_ ? st_.train_seconds + seconds_since(round_start_) : st_.train_seconds;
  }

  index_t epoch_limit() const {
    return opt_.max_epochs > 0.0
               ? static_cast<index_t>(std::ceil(opt_.max_epochs * static_cast<double>(n_)))
               : 0;
  }

  bool interrupted() const { return cb_.stop != nullptr && cb_.stop->load(); }

  // True when workers must stop taking batches (checked before every batch).
  bool out_of_budget() const {
    if (interrupted()) return true;
    if (opt_.time_budget_s > 0.0 && train_clock() >= opt_.time_budget_s) return true;
    const index_t limit = epoch_limit();
    return limit > 0 && source_->consumed() >= limit;
  }

  bool should_stop(StopReason* why) const {
    return stop_rule(opt_, st_, selector_, interrupted(), source_->consumed(), epoch_limit(), why);
  }

  // ---------------------------------------------------------------- rounds and records
  void run_round(RoundContext& ctx) {
    reps_.begin_round();
    round_start_ = Clock::now();
    round_running_ = true;
    std::vector<double> weights(static_cast<std::size_t>(reps_.size()), 0.0);
    const double merge = round_->run(ctx, &weights);
    const double round_s = seconds_since(round_start_);
    st_.train_seconds += round_s;
    // Rank 0's clock is the run's: budget checks inside the next round then agree on all nodes.
    if (nodes_.multi()) st_.train_seconds = nodes_.from_root(st_.train_seconds);
    round_running_ = false;
    merge_s_ += merge;
    reps_.end_round();
    if (opt_.ema > 0.0) {
      if (centre_is_replica()) refresh_centre_from_replica();
      centre_.update_average(opt_.ema);
    }
    ++st_.round;
    grow_round(ctx, merge, round_s);

    const int k = reps_.size();
    std::vector<index_t> n(static_cast<std::size_t>(k)), m(n.size());
    std::vector<double> busy(n.size());
    RoundRecord rec;
    rec.round = st_.round;
    rec.time_s = st_.train_seconds;
    rec.samples = source_->consumed();
    rec.epoch = source_->epochs();
    rec.merge_s = merge;
    rec.weights = weights;
    double loss = 0.0;
    index_t pts = 0;
    for (int i = 0; i < k; ++i) {
      const SlotScratch& s = reps_.scratch(i);
      // A diverged replica poisons every merge after it: stop here, before the checkpoint
      // (the file on disk stays the last good state) and before the model is saved.
      HETSGD_CHECK_NUMERIC(std::isfinite(s.loss_sum),
                           "round " << st_.round << ": " << reps_.device(i).id().str()
                                    << " produced a non-finite training loss (" << s.loss_sum
                                    << "); the run stopped; lower --lr");
      n[i] = s.stats.updates;
      m[i] = s.stats.samples;
      busy[i] = s.stats.busy_s;
      loss += s.loss_sum;
      pts += m[i];
      rec.devices.push_back(s.stats);
    }
    rec.train_loss = pts > 0 ? loss / static_cast<double>(pts) : 0.0;
    st_.loss_since_eval += loss;
    st_.points_since_eval += pts;
    sizer_.observe_round(n, m, busy, reps_.alive_mask(), in_warmup(opt_, source_->consumed(), n_));
    if (cb_.on_round) cb_.on_round(rec);
    result_.rounds.push_back(std::move(rec));
  }

  // TrainOptions::merge_budget: a round whose merge took more than the budget's share of it
  // doubles S. A merge moves the rows touched since the last one, which grow slower than S,
  // so larger rounds bring its share down.
  void grow_round(RoundContext& ctx, double merge_s, double round_s) {
    const bool averaging = opt_.algo == Algo::kAdaptive || opt_.algo == Algo::kAvg;
    if (!averaging || opt_.round_samples > 0 || opt_.merge_budget <= 0.0 || opt_.deterministic ||
        nodes_.multi() || st_.round < 2) {
      return;  // the first round's merge is not typical: the replicas start from one model
    }
    const index_t cap = std::max(s_, n_ / 4);
    if (merge_s <= opt_.merge_budget * round_s || s_ >= cap) return;
    s_ = std::min(cap, 2 * s_);
    ctx.round_samples = s_;
    if (opt_.eval_every_rounds == 0) r_ = resolve_eval_every(opt_, s_, n_);  // same per epoch
  }

  // Z lives in a replica (sync, or one device averaging with itself): read it from there
  // before it is evaluated, saved or averaged.
  bool centre_is_replica() const {
    return round_->centre_is_replica() || centre_follows_replica(opt_, reps_, nodes_);
  }

  void refresh_centre_from_replica() {
    for (int i = 0; i < reps_.size(); ++i) {
      if (reps_.alive(i)) {
        centre_.refresh_from(reps_.device(i));
        return;
      }
    }
  }

  void evaluate_centre() {
    if (!nodes_.is_root()) return;  // the other nodes wait at the next stop decision
    if (centre_is_replica()) refresh_centre_from_replica();
    check_finite_centre("evaluation");
    const auto t0 = Clock::now();
    const bool swap = !round_->replicas_hold_centre(opt_) || !centre_.average().empty();
    auto eval_on = [&](const Dataset& set) {
      return hetsgd::evaluate_centre(reps_, centre_, swap, sizer_.throughput(), set, opt_.eval_topk,
                                     opt_.eval_batch, opt_.eval_max_points);
    };
    const RankingMetrics test = eval_on(test_);
    EvalRecord rec;
    rec.metrics = test;
    if (val_ != nullptr) {
      rec.has_val = true;
      rec.val_metrics = eval_on(*val_);
      rec.best = selector_.offer(centre_.evaluated(), rec.val_metrics, test, st_.round);
    }
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
    // number; stopping there is a decision, so it reads the validation curve when there is one.
    const double p1 = test.p_at(1);
    result_.best_p1 = std::max(result_.best_p1, p1);
    if (opt_.target_p1 > 0.0 && p1 >= opt_.target_p1 && result_.time_to_target_s < 0.0) {
      result_.time_to_target_s = st_.train_seconds;
    }
    const double decide = val_ != nullptr ? rec.val_metrics.p_at(1) : p1;
    if (opt_.target_p1 > 0.0 && decide >= opt_.target_p1) st_.target_reached = true;
    if (cb_.on_eval) cb_.on_eval(rec);
    result_.evals.push_back(std::move(rec));
  }

  void check_finite_centre(const char* when) const {
    const index_t bad = first_non_finite(centre_.z());
    HETSGD_CHECK_NUMERIC(bad < 0, "round " << st_.round
                                           << ": the centre model holds a non-finite parameter "
                                              "(index "
                                           << bad << ") at " << when
                                           << "; the run stopped; lower --lr");
  }

  void write_checkpoint() {
    const auto t0 = Clock::now();
    // The counters and cursor as a state (collective across nodes: the global cursor); the
    // model-sized buffers stream from the centre, the devices and the best model's file, so
    // a checkpoint holds no copy of them (at 670,091 labels that was 1.4 GB).
    const TrainState s = snapshot(false);
    check_finite_centre("checkpoint");  // after snapshot(), which brings Z up to date
    if (nodes_.is_root()) {
      CheckpointSources src;
      src.centre = StreamedFloats::of(centre_.z());
      src.previous_centre = StreamedFloats::of(centre_.z_prev());
      src.average = StreamedFloats::of(centre_.average());
      src.best_centre = selector_.stream_model();
      src.slots = stream_slots(reps_, *round_, opt_);
      save_checkpoint(opt_.checkpoint_path, s, src);
    }
    ckpt_s_ += seconds_since(t0);
  }

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
  int r_ = 1;      // evaluation period in rounds
  TrainState st_;  // counters and clocks; centre, cursor and slots live in their owners
  ModelSelector selector_{opt_, &st_};
  double merge_s_ = 0.0, ckpt_s_ = 0.0;
  bool round_running_ = false;
  Clock::time_point round_start_;
  TrainResult result_;
};

}  // namespace

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const TrainData& data,
                  const TrainOptions& options, TrainState initial,
                  const TrainCallbacks& callbacks) {
  HETSGD_CHECK(data.train != nullptr && data.test != nullptr, "train: no training or test set");
  RunLoop loop(devices, comm, data, options, callbacks);
  return loop.run(std::move(initial));
}

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options, TrainState initial,
                  const TrainCallbacks& callbacks) {
  return train(devices, comm, TrainData{&train_set, &test_set, nullptr}, options,
               std::move(initial), callbacks);
}

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks) {
  return train(devices, comm, train_set, test_set, options, TrainState{}, callbacks);
}

TrainResult train(std::vector<std::unique_ptr<Device>>& devices, Communicator& comm,
                  const Dataset& train_set, const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks) {
  std::vector<Device*> raw;
  for (auto& d : devices) raw.push_back(d.get());
  return train(raw, comm, train_set, test_set, options, callbacks);
}

}  // namespace hetsgd
