// The run loop itself: its construction, the loop over rounds, a fresh start or a restored
// state, the clock and the stopping rules, and what a round leaves behind (its record, the
// batch policy's observation, a larger S when merges dominate).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/engine/checkpoint.h"
#include "core/engine/evaluation.h"
#include "core/engine/node_run.h"
#include "core/engine/run_checks.h"
#include "core/engine/run_loop.h"
#include "core/engine/slot_transfer.h"
#include "core/error.h"

namespace hetsgd {

RunLoop::RunLoop(const std::vector<Device*>& devices, Communicator& comm, const TrainData& data,
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
  // Patience decides the length of a default run that validation can stop (kAutoMinSamples).
  resolve_schedule(
      devices[0]->config(),
      {train_.rows(), test_.rows(), val_ ? val_->rows() : 0, pass_epochs(opt_, train_)}, &opt_);
  HETSGD_CHECK(val_ != nullptr || opt_.patience == 0,
               "train: --patience needs validation data (the test set never drives a decision)");
  scaling_ = resolve_lr_scaling(opt_.lr_scaling, devices[0]->config().optimizer.kind);
  n_ = train_.rows();
  check_node_run(nodes_, opt_, train_, devices[0]->config(), reps_.param_count());
  // S counts the devices of every node: a round is one mega-batch of the whole job.
  s_ = resolve_round_samples(opt_, static_cast<int>(nodes_.sum(index_t{reps_.size()})), n_);
  evals_ =
      std::make_unique<TrainingEvaluations>(opt_, cb_, devices[0]->config(), train_, test_, val_);
  evals_->set_round_samples(s_);
  result_.algo = opt_.algo;
  if (nodes_.multi()) {
    // Batch sizes adapt on every node's devices: with one device per rank the policies would
    // otherwise see a single device and never equalise update counts across ranks.
    sizer_.set_node_sum([this](double* v, int n) { nodes_.cluster().allreduce_sum(v, n); });
  }
}

TrainResult RunLoop::run(TrainState initial) {
  if (initial.empty() && !opt_.resume_path.empty()) initial = load_checkpoint(opt_.resume_path);
  if (initial.empty()) {
    start_fresh();
  } else {
    restore(initial);
  }
  if (nodes_.multi() && draws_global_cursor(opt_.algo)) source_->share(nodes_.cluster());
  source_->set_limit(epoch_limit());
  std::function<bool()> budget = [this] { return out_of_budget(); };
  const double unit = decay_unit(opt_, n_, train_.label_nnz(), train_.num_labels);
  RoundContext ctx{opt_,   train_,   reps_, centre_, comm_, *source_,      nodes_,
                   sizer_, scaling_, n_,    unit,    s_,    epoch_limit(), std::move(budget)};
  evals_->start_at(st_.round);
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
    if (evals_->due(st_.round)) {
      evaluate_centre(ends_here());
      evals_->evaluated(st_.round);
      evaluated_last = true;
    }
    if (!opt_.checkpoint_path.empty() && opt_.checkpoint_every_rounds > 0 &&
        st_.round % opt_.checkpoint_every_rounds == 0) {
      write_checkpoint();
    }
  }
  if (!evaluated_last || result_.evals.empty()) evaluate_centre(returns_centre());
  if (!opt_.checkpoint_path.empty()) write_checkpoint();
  return finish();
}

void RunLoop::start_fresh() {
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

void RunLoop::restore(const TrainState& s) {
  const std::string mine = opt_.trajectory_text();
  const std::string from = opt_.resume_path.empty() ? "train state" : opt_.resume_path;
  HETSGD_CHECK(s.options_text == mine, from << ": was written with other options\n  saved: "
                                            << s.options_text << "\n  now:   " << mine);
  const ModelConfig& model = reps_.device(0).config();
  const std::string optimizer = to_string(model.optimizer.kind);
  HETSGD_CHECK(s.optimizer.empty() || s.optimizer == optimizer,
               from << ": was written with --optimizer=" << s.optimizer
                    << ", this run uses --optimizer=" << optimizer
                    << " (resume with the same optimiser)");
  const std::string shape = model_shape_text(model);
  HETSGD_CHECK(s.model_shape.empty() || s.model_shape == shape,
               from << ": holds a model of layers " << s.model_shape << ", this run's model is "
                    << shape
                    << " (features-hidden-labels: resume with the same --hidden and data)");
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
  restore_slots(s, reps_, sizer_, nodes_.rank());
  selector_.adopt_state();  // before the replicas fill up: the best model goes to its file
}

double RunLoop::train_clock() const {
  return round_running_ ? st_.train_seconds + seconds_since(round_start_) : st_.train_seconds;
}

index_t RunLoop::epoch_limit() const {
  return opt_.max_epochs > 0.0
             ? static_cast<index_t>(std::ceil(opt_.max_epochs * static_cast<double>(n_)))
             : 0;
}

// True when workers must stop taking batches (checked before every batch).
bool RunLoop::out_of_budget() const {
  if (interrupted()) return true;
  if (opt_.time_budget_s > 0.0 && train_clock() >= opt_.time_budget_s) return true;
  const index_t limit = epoch_limit();
  return limit > 0 && source_->limit_reached();
}

bool RunLoop::returns_centre() const {
  return nodes_.is_root() && opt_.checkpoint_path.empty() && !opt_.keep_final_state;
}

bool RunLoop::ends_here() const {
  StopReason why;
  if (!returns_centre() || !should_stop(&why)) return false;
  return why != StopReason::kTarget && why != StopReason::kNoImprovement;
}

bool RunLoop::should_stop(StopReason* why) const {
  return stop_rule(opt_, st_, selector_, interrupted(), source_->consumed(), epoch_limit(), why);
}

void RunLoop::run_round(RoundContext& ctx) {
  reps_.begin_round();
  round_start_ = Clock::now();
  round_running_ = true;
  std::vector<double> weights(static_cast<std::size_t>(reps_.size()), 0.0);
  const double merge = round_->run(ctx, &weights);
  source_->settle();  // across nodes: T over every node, read once per round
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
// so larger rounds bring its share down. One replica merges nothing: its rounds stay fixed,
// so that a timing hiccup cannot change the evaluation cadence (and keep-best's choice) of a
// single-device run, which is otherwise reproducible.
void RunLoop::grow_round(RoundContext& ctx, double merge_s, double round_s) {
  const bool averaging = opt_.algo == Algo::kAdaptive || opt_.algo == Algo::kAvg;
  if (!averaging || opt_.round_samples > 0 || opt_.merge_budget <= 0.0 || opt_.deterministic ||
      nodes_.multi() || st_.round < 2 || reps_.num_alive() < 2) {
    return;  // the first round's merge is not typical: the replicas start from one model
  }
  const index_t cap = std::max(s_, n_ / 4);
  if (merge_s <= opt_.merge_budget * round_s || s_ >= cap) return;
  s_ = std::min(cap, 2 * s_);
  ctx.round_samples = s_;
  evals_->set_round_samples(s_);  // the same share of each epoch
}

}  // namespace hetsgd
