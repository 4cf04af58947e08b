#include "core/engine/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <sstream>

#include "core/checkpoint.h"
#include "core/checksum.h"
#include "core/engine/batch_policy.h"
#include "core/engine/batch_source.h"
#include "core/engine/device_worker.h"
#include "core/engine/evaluation.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/merge_weights.h"
#include "core/error.h"

namespace hetsgd {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kTimeBudget:
      return "time budget";
    case StopReason::kMaxEpochs:
      return "max epochs";
    case StopReason::kMaxRounds:
      return "max rounds";
    case StopReason::kTarget:
      return "target reached";
    case StopReason::kInterrupted:
      return "interrupted";
  }
  return "?";
}

index_t resolve_round_samples(const TrainOptions& options, int num_devices, index_t num_points) {
  if (options.round_samples > 0) return options.round_samples;
  // At least kMinBatchesPerRound global batches per round: a round's fixed costs (the barrier
  // tail, at most one batch of the slowest device; the merge; waking the workers) then stay a
  // few percent of it. With 2 x 128 on delicious, N / 16 = 807 points left the fast device
  // idle 16% of every round; 2048 points keep it busy ~95% at the same P@1 per epoch.
  const index_t s =
      std::max<index_t>(num_points / 16, kMinBatchesPerRound * num_devices * options.b0);
  return std::max<index_t>(1, std::min(s, num_points));
}

int resolve_eval_every(const TrainOptions& options, index_t round_samples, index_t num_points) {
  if (options.eval_every_rounds > 0) return options.eval_every_rounds;
  const double per_half_epoch =
      static_cast<double>(num_points) / (2.0 * static_cast<double>(round_samples));
  return std::max(1, static_cast<int>(std::lround(per_half_epoch)));
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

// Per-slot scratch a worker owns during a round: its batch and index buffers and counters.
struct SlotScratch {
  std::vector<index_t> rows;
  CsrBatch batch;
  DeviceRoundStats stats;
  double loss_sum = 0.0;  // sum of batch-mean losses weighted by batch rows
};

class Engine {
 public:
  Engine(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
         const Dataset& test_set, const TrainOptions& options, const TrainCallbacks& callbacks)
      : devs_(devices),
        comm_(comm),
        train_(train_set),
        test_(test_set),
        opt_(options),
        cb_(callbacks),
        k_(static_cast<int>(devices.size())),
        sizer_(options, std::max(1, static_cast<int>(devices.size()))) {
    opt_.validate();
    HETSGD_CHECK(k_ >= 1, "train: no devices");
    for (Device* d : devs_) HETSGD_CHECK(d != nullptr, "train: null device");
    const ModelConfig& cfg = devs_[0]->config();
    n_params_ = devs_[0]->layout().total();
    for (Device* d : devs_) {
      HETSGD_CHECK(d->layout().total() == n_params_,
                   "train: device " << d->name() << " holds " << d->layout().total()
                                    << " parameters, " << devs_[0]->name() << " holds "
                                    << n_params_);
    }
    HETSGD_CHECK(train_.rows() >= 1, "train: the training set has no rows");
    HETSGD_CHECK(train_.num_features <= cfg.num_features,
                 "train: training set has " << train_.num_features << " features, the model "
                                            << cfg.num_features);
    HETSGD_CHECK(
        train_.num_labels == cfg.num_labels,
        "train: training set has " << train_.num_labels << " labels, the model " << cfg.num_labels);
    HETSGD_CHECK(test_.num_features <= cfg.num_features,
                 "train: test set has " << test_.num_features << " features, the model "
                                        << cfg.num_features);
    HETSGD_CHECK(test_.num_labels == cfg.num_labels, "train: test set has " << test_.num_labels
                                                                            << " labels, the model "
                                                                            << cfg.num_labels);
    scaling_ = resolve_lr_scaling(opt_.lr_scaling, cfg.optimizer.kind);
    n_ = train_.rows();
    s_ = resolve_round_samples(opt_, k_, n_);
    r_ = resolve_eval_every(opt_, s_, n_);
    alive_.assign(static_cast<size_t>(k_), true);
    failure_.assign(static_cast<size_t>(k_), std::string());
    total_updates_.assign(static_cast<size_t>(k_), 0);
    total_samples_.assign(static_cast<size_t>(k_), 0);
    scratch_.resize(static_cast<size_t>(k_));
    for (int i = 0; i < k_; ++i) workers_.push_back(std::make_unique<DeviceWorker>());
    z_.resize(static_cast<size_t>(n_params_));
    z_prev_.resize(z_.size());
    avg_.resize(z_.size());
    tmp_.resize(z_.size());
    result_.algo = opt_.algo;
  }

  TrainResult run() {
    start();
    if (opt_.eval_at_start && round_ == 0 && !result_.resumed) evaluate_centre();
    bool evaluated_last = true;
    for (;;) {
      StopReason why;
      if (should_stop(&why)) {
        result_.stop = why;
        break;
      }
      run_round();
      ++round_;
      evaluated_last = false;
      if (round_ % r_ == 0) {
        evaluate_centre();
        evaluated_last = true;
      }
      if (!opt_.checkpoint_path.empty() && opt_.checkpoint_every_rounds > 0 &&
          round_ % opt_.checkpoint_every_rounds == 0) {
        write_checkpoint();
      }
    }
    if (!evaluated_last || result_.evals.empty()) evaluate_centre();
    if (!opt_.checkpoint_path.empty()) write_checkpoint();
    return finish();
  }

 private:
  // ---------------------------------------------------------------- setup and teardown
  void start() {
    if (!opt_.resume_path.empty()) {
      resume(load_checkpoint(opt_.resume_path));
      return;
    }
    source_ = std::make_unique<BatchSource>(n_, opt_.seed);
    devs_[0]->read_params(z_.data());
    z_prev_ = z_;
    comm_.broadcast_params(alive_devices(), z_.data());
  }

  void resume(const TrainCheckpoint& c) {
    const std::string mine = opt_.trajectory_text();
    HETSGD_CHECK(c.options_text == mine,
                 opt_.resume_path << ": checkpoint was written with other options\n  checkpoint: "
                                  << c.options_text << "\n  now:        " << mine);
    HETSGD_CHECK(c.param_count == n_params_, opt_.resume_path
                                                 << ": checkpoint holds " << c.param_count
                                                 << " parameters, the model " << n_params_);
    HETSGD_CHECK(c.cursor.num_points == n_, opt_.resume_path << ": checkpoint was trained on "
                                                             << c.cursor.num_points
                                                             << " points, not " << n_);
    source_ = std::make_unique<BatchSource>(c.cursor);
    z_ = c.centre;
    z_prev_ = c.previous_centre;
    // Batch sizes and throughputs belong to device slots: only meaningful on the same set.
    sizer_.restore(c.batch_sizes, c.throughput, c.past_warmup);
    round_ = c.round;
    train_s_ = c.train_seconds;
    eval_s_ = c.eval_seconds;
    result_.best_p1 = c.best_p1;
    result_.time_to_target_s = c.time_to_target_s;
    result_.resumed = true;
    for (Device* d : devs_) d->reset_optimizer();
    comm_.broadcast_params(alive_devices(), z_.data());
  }

  TrainResult finish() {
    if (opt_.algo == Algo::kSync) refresh_centre_from_replica();
    result_.centre = z_;
    result_.train_seconds = train_s_;
    result_.eval_seconds = eval_s_;
    result_.merge_seconds = merge_s_;
    result_.checkpoint_seconds = ckpt_s_;
    result_.samples = source_->consumed();
    result_.epochs = source_->epochs();
    result_.rounds_done = round_;
    if (!result_.evals.empty()) result_.final_metrics = result_.evals.back().metrics;
    for (int i = 0; i < k_; ++i) {
      DeviceSummary s;
      s.name = devs_[i]->name();
      s.id = devs_[i]->id();
      s.alive = alive_[i];
      s.failure = failure_[i];
      s.updates = total_updates_[i];
      s.samples = total_samples_[i];
      s.batch_size = batch_of(i);
      s.throughput = sizer_.throughput()[i];
      result_.devices.push_back(s);
    }
    return std::move(result_);
  }

  // ---------------------------------------------------------------- helpers
  std::vector<Device*> alive_devices() const {
    std::vector<Device*> out;
    for (int i = 0; i < k_; ++i) {
      if (alive_[i]) out.push_back(devs_[i]);
    }
    return out;
  }
  int num_alive() const { return static_cast<int>(std::count(alive_.begin(), alive_.end(), true)); }

  index_t batch_of(int slot) const {
    return opt_.algo == Algo::kAdaptive ? sizer_.sizes()[slot] : opt_.b0;
  }

  double train_clock() const {
    return round_running_ ? train_s_ + seconds_since(round_start_) : train_s_;
  }

  index_t epoch_limit() const {
    return opt_.max_epochs > 0.0
               ? static_cast<index_t>(std::ceil(opt_.max_epochs * static_cast<double>(n_)))
               : 0;
  }

  // True when workers must stop taking batches (checked before every batch).
  bool out_of_budget() const {
    if (cb_.stop != nullptr && cb_.stop->load()) return true;
    if (opt_.time_budget_s > 0.0 && train_clock() >= opt_.time_budget_s) return true;
    const index_t limit = epoch_limit();
    return limit > 0 && source_->consumed() >= limit;
  }

  bool should_stop(StopReason* why) const {
    if (cb_.stop != nullptr && cb_.stop->load()) {
      *why = StopReason::kInterrupted;
      return true;
    }
    if (target_reached_ && opt_.stop_at_target) {
      *why = StopReason::kTarget;
      return true;
    }
    if (opt_.max_rounds > 0 && round_ >= opt_.max_rounds) {
      *why = StopReason::kMaxRounds;
      return true;
    }
    const index_t limit = epoch_limit();
    if (limit > 0 && source_->consumed() >= limit) {
      *why = StopReason::kMaxEpochs;
      return true;
    }
    if (opt_.time_budget_s > 0.0 && train_s_ >= opt_.time_budget_s) {
      *why = StopReason::kTimeBudget;
      return true;
    }
    return false;
  }

  // Posts `task(slot)` to the worker of every alive slot, waits for all, and removes the slots
  // whose task threw. Throws when none is left.
  template <class Task>
  void run_on_alive(Task task) {
    for (int i = 0; i < k_; ++i) {
      if (alive_[i]) workers_[i]->post([&task, i] { task(i); });
    }
    for (int i = 0; i < k_; ++i) {
      if (!alive_[i]) continue;
      std::exception_ptr e = workers_[i]->wait();
      if (e) mark_failed(i, describe(e));
    }
    check_survivors();
  }

  void mark_failed(int slot, const std::string& what) {
    alive_[slot] = false;
    failure_[slot] = what;
  }

  void check_survivors() const {
    if (num_alive() > 0) return;
    std::ostringstream os;
    os << "every device failed:";
    for (int i = 0; i < k_; ++i) os << "\n  " << devs_[i]->id().str() << ": " << failure_[i];
    throw Error(os.str());
  }

  // Trains `slot`'s replica on its next batch of `b` points; false when the round's quota
  // (checked by `take`) or the budget says stop. On a device error the batch goes back to the
  // cursor before the exception propagates, so no point is lost.
  // `lr_batch` is the batch size the learning-rate scaling sees (TrainOptions::lr_batch).
  template <class Take, class Give>
  bool local_step(int slot, index_t b, index_t lr_batch, Take take, Give give_back) {
    if (out_of_budget() || !take(b)) return false;
    SlotScratch& s = scratch_[slot];
    const auto t0 = Clock::now();
    const index_t seen = source_->next(b, &s.rows);
    const double lr = learning_rate(opt_, scaling_, lr_batch, seen, n_);
    float loss = 0.0f;
    try {
      gather_rows(train_, s.rows.data(), b, &s.batch);
      loss = devs_[slot]->train_step(s.batch, static_cast<float>(lr));
    } catch (...) {
      source_->requeue(s.rows);
      give_back(b);
      throw;
    }
    s.stats.busy_s += seconds_since(t0);
    s.stats.updates += 1;
    s.stats.samples += b;
    s.stats.batch_size = b;
    s.stats.lr = lr;
    s.loss_sum += static_cast<double>(loss) * static_cast<double>(b);
    return true;
  }

  // ---------------------------------------------------------------- rounds
  void run_round() {
    for (SlotScratch& s : scratch_) {
      s.stats = DeviceRoundStats{};
      s.loss_sum = 0.0;
    }
    round_start_ = Clock::now();
    round_running_ = true;
    double merge = 0.0;
    std::vector<double> weights(static_cast<size_t>(k_), 0.0);
    switch (opt_.algo) {
      case Algo::kAdaptive:
        merge = adaptive_round(&weights);
        break;
      case Algo::kSync:
        merge = sync_round(&weights);
        break;
      case Algo::kAvg:
        merge = avg_round(&weights);
        break;
      case Algo::kEasgd:
        merge = easgd_round(&weights);
        break;
    }
    train_s_ += seconds_since(round_start_);
    round_running_ = false;
    merge_s_ += merge;

    std::vector<index_t> n(k_), m(k_);
    std::vector<double> busy(k_);
    RoundRecord rec;
    rec.round = round_ + 1;
    rec.time_s = train_s_;
    rec.samples = source_->consumed();
    rec.epoch = source_->epochs();
    rec.merge_s = merge;
    rec.weights = weights;
    double loss = 0.0;
    index_t pts = 0;
    for (int i = 0; i < k_; ++i) {
      const SlotScratch& s = scratch_[i];
      n[i] = s.stats.updates;
      m[i] = s.stats.samples;
      busy[i] = s.stats.busy_s;
      total_updates_[i] += n[i];
      total_samples_[i] += m[i];
      loss += s.loss_sum;
      pts += m[i];
      rec.devices.push_back(s.stats);
    }
    rec.train_loss = pts > 0 ? loss / static_cast<double>(pts) : 0.0;
    loss_since_eval_ += loss;
    points_since_eval_ += pts;
    sizer_.observe_round(n, m, busy, alive_, in_warmup(opt_, source_->consumed(), n_));
    if (cb_.on_round) cb_.on_round(rec);
    result_.rounds.push_back(std::move(rec));
  }

  double adaptive_round(std::vector<double>* weights) {
    std::mutex m;
    index_t assigned = 0;
    const index_t quota = s_;
    // The batch sizes of this round: the warm-up size, then the policy's (BatchSizer).
    const std::vector<index_t> sizes = sizer_.sizes();
    auto take = [&](index_t b) {
      std::lock_guard<std::mutex> lock(m);
      if (assigned >= quota) return false;
      assigned += b;
      return true;
    };
    auto give_back = [&](index_t b) {
      std::lock_guard<std::mutex> lock(m);
      assigned -= b;
    };
    index_t global = 0;
    for (int i = 0; i < k_; ++i) global += alive_[i] ? sizes[i] : 0;
    run_on_alive([&](int i) {
      const index_t lr_batch = opt_.lr_batch == LrBatch::kRound ? global : sizes[i];
      while (local_step(i, sizes[i], lr_batch, take, give_back)) {
      }
    });
    return merge(weights, opt_.merge_weights, opt_.alpha, opt_.beta, opt_.mu);
  }

  double avg_round(std::vector<double>* weights) {
    const int live = num_alive();
    const index_t per_device = (s_ + live - 1) / live;
    const index_t batches = std::max<index_t>(1, (per_device + opt_.b0 - 1) / opt_.b0);
    const index_t lr_batch = opt_.lr_batch == LrBatch::kRound ? live * opt_.b0 : opt_.b0;
    run_on_alive([&](int i) {
      index_t left = batches;
      auto take = [&left](index_t) { return left-- > 0; };
      auto give_back = [](index_t) {};
      while (local_step(i, opt_.b0, lr_batch, take, give_back)) {
      }
    });
    // The paper's "GD": uniform weights, every replica restarts from the plain average.
    return merge(weights, MergeWeights::kUniform, 1.0, 1.0, 0.0);
  }

  double easgd_round(std::vector<double>* weights) {
    const index_t per_period = static_cast<index_t>(num_alive()) * opt_.b0 * opt_.easgd_tau;
    const index_t periods = std::max<index_t>(1, (s_ + per_period - 1) / per_period);
    double merge_time = 0.0;
    for (index_t p = 0; p < periods && !out_of_budget(); ++p) {
      run_on_alive([&](int i) {
        int left = opt_.easgd_tau;
        auto take = [&left](index_t) { return left-- > 0; };
        auto give_back = [](index_t) {};
        // EASGD replicas never restart from an average: each is its own b0-batch SGD.
        while (local_step(i, opt_.b0, opt_.b0, take, give_back)) {
        }
      });
      const auto t0 = Clock::now();
      const std::vector<Device*> live = alive_devices();
      const double kk = static_cast<double>(live.size());
      const double a = opt_.easgd_rate > 0.0 ? opt_.easgd_rate : 0.9 / kk;
      std::vector<double> w(live.size(), 1.0 / kk);
      comm_.average_params(live, w, avg_.data());
      // Zhang et al. eq. 5-6, synchronous: both moves use the old centre.
      z_prev_ = z_;
      update_centre(z_.data(), tmp_.data(), avg_.data(), n_params_, a * kk, 0.0);
      for (Device* d : live) {
        d->read_params(tmp_.data());
        pull_towards(tmp_.data(), z_prev_.data(), n_params_, a);
        d->write_params(tmp_.data());
      }
      merge_time += seconds_since(t0);
    }
    const double live = static_cast<double>(num_alive());
    for (int i = 0; i < k_; ++i) (*weights)[i] = alive_[i] ? 1.0 / live : 0.0;
    return merge_time;
  }

  double sync_round(std::vector<double>* weights) {
    double merge_time = 0.0;
    index_t done = 0;
    std::vector<index_t> global;
    while (done < s_ && !out_of_budget()) {
      std::vector<int> slots;
      for (int i = 0; i < k_; ++i) {
        if (alive_[i]) slots.push_back(i);
      }
      const index_t share = opt_.b0;
      const index_t total = share * static_cast<index_t>(slots.size());
      const index_t seen = source_->next(total, &global);
      const double lr = learning_rate(opt_, scaling_, total, seen, n_);
      std::vector<int> position(static_cast<size_t>(k_), -1);
      for (size_t j = 0; j < slots.size(); ++j) position[slots[j]] = static_cast<int>(j);
      const int before = num_alive();
      run_on_alive([&](int i) {
        SlotScratch& s = scratch_[i];
        const auto t0 = Clock::now();
        gather_rows(train_, global.data() + position[i] * share, share, &s.batch);
        // Scaled by share / B so that the all-reduced sum is the gradient of the B-point mean.
        const float loss = devs_[i]->gradient(
            s.batch, static_cast<float>(static_cast<double>(share) / static_cast<double>(total)));
        s.stats.busy_s += seconds_since(t0);
        s.loss_sum += static_cast<double>(loss) * static_cast<double>(share);
      });
      if (num_alive() < before) {
        // A share is missing: the step is void; its points go back and the next step splits
        // the global batch over the survivors.
        source_->requeue(global);
        continue;
      }
      const auto t0 = Clock::now();
      const std::vector<Device*> live = alive_devices();
      comm_.allreduce_gradients(live, std::vector<double>(live.size(), 1.0));
      merge_time += seconds_since(t0);
      run_on_alive([&](int i) {
        const auto t1 = Clock::now();
        devs_[i]->apply_update(static_cast<float>(lr));
        SlotScratch& s = scratch_[i];
        s.stats.busy_s += seconds_since(t1);
        s.stats.updates += 1;
        s.stats.samples += share;
        s.stats.batch_size = share;
        s.stats.lr = lr;
      });
      done += total;
    }
    const double live = static_cast<double>(num_alive());
    for (int i = 0; i < k_; ++i) (*weights)[i] = alive_[i] ? 1.0 / live : 0.0;
    return merge_time;
  }

  // Normalised merge over the alive slots and the elastic centre update; returns its time.
  double merge(std::vector<double>* weights, MergeWeights kind, double alpha, double beta,
               double mu) {
    const auto t0 = Clock::now();
    std::vector<index_t> n(k_), m(k_);
    bool trained = false;
    for (int i = 0; i < k_; ++i) {
      n[i] = scratch_[i].stats.updates;
      m[i] = scratch_[i].stats.samples;
      trained = trained || (alive_[i] && n[i] > 0);
    }
    *weights = merge_weights(kind, n, m, alive_);
    if (!trained) return seconds_since(t0);  // replicas still equal the centre
    std::vector<Device*> live;
    std::vector<double> w;
    for (int i = 0; i < k_; ++i) {
      if (!alive_[i]) continue;
      live.push_back(devs_[i]);
      w.push_back((*weights)[i]);
    }
    comm_.average_params(live, w, avg_.data());
    update_centre(z_.data(), z_prev_.data(), avg_.data(), n_params_, alpha, mu);
    if (beta >= 1.0) {
      comm_.broadcast_params(live, z_.data());
    } else {
      for (Device* d : live) {
        d->read_params(tmp_.data());
        pull_towards(tmp_.data(), z_.data(), n_params_, beta);
        d->write_params(tmp_.data());
      }
    }
    return seconds_since(t0);
  }

  // Sync keeps no separate centre: every replica holds the same weights.
  void refresh_centre_from_replica() {
    for (int i = 0; i < k_; ++i) {
      if (!alive_[i]) continue;
      devs_[i]->read_params(z_.data());
      z_prev_ = z_;
      return;
    }
  }

  // True when the replicas hold exactly the centre (no swap needed to evaluate it).
  bool replicas_hold_centre() const {
    if (opt_.algo == Algo::kSync || opt_.algo == Algo::kAvg) return true;
    if (opt_.algo == Algo::kAdaptive) return opt_.beta >= 1.0;
    return false;  // EASGD replicas stay apart from the centre
  }

  // ---------------------------------------------------------------- evaluation
  void evaluate_centre() {
    if (opt_.algo == Algo::kSync) refresh_centre_from_replica();
    const auto t0 = Clock::now();
    RankingMetrics metrics;
    bool ok = false;
    // Prefer the fastest device; a failure here removes that device like a failed step.
    std::vector<int> order;
    for (int i = 0; i < k_; ++i) {
      if (alive_[i]) order.push_back(i);
    }
    const std::vector<double>& rate = sizer_.throughput();
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rate[a] > rate[b]; });
    for (int slot : order) {
      Device* d = devs_[slot];
      workers_[slot]->post([&] {
        const bool swap = !replicas_hold_centre();
        if (swap) {
          d->read_params(tmp_.data());
          d->write_params(z_.data());
        }
        metrics = evaluate(*d, test_, opt_.eval_topk, opt_.eval_batch, opt_.eval_max_points);
        if (swap) d->write_params(tmp_.data());
      });
      std::exception_ptr e = workers_[slot]->wait();
      if (!e) {
        ok = true;
        break;
      }
      mark_failed(slot, describe(e));
    }
    check_survivors();
    HETSGD_ASSERT(ok);
    (void)ok;
    const double dt = seconds_since(t0);
    eval_s_ += dt;
    EvalRecord rec;
    rec.time_s = train_s_;
    rec.eval_s = dt;
    rec.eval_total_s = eval_s_;
    rec.epoch = source_->epochs();
    rec.round = round_;
    rec.samples = source_->consumed();
    rec.train_loss =
        points_since_eval_ > 0 ? loss_since_eval_ / static_cast<double>(points_since_eval_) : 0.0;
    loss_since_eval_ = 0.0;
    points_since_eval_ = 0;
    rec.metrics = metrics;
    rec.device_updates = total_updates_;
    for (int i = 0; i < k_; ++i) rec.device_batch.push_back(batch_of(i));
    rec.devices_alive = num_alive();
    const double p1 = metrics.p_at(1);
    result_.best_p1 = std::max(result_.best_p1, p1);
    if (opt_.target_p1 > 0.0 && p1 >= opt_.target_p1) {
      if (result_.time_to_target_s < 0.0) result_.time_to_target_s = train_s_;
      target_reached_ = true;
    }
    if (cb_.on_eval) cb_.on_eval(rec);
    result_.evals.push_back(std::move(rec));
  }

  // ---------------------------------------------------------------- checkpoints
  void write_checkpoint() {
    const auto t0 = Clock::now();
    if (opt_.algo == Algo::kSync) refresh_centre_from_replica();
    TrainCheckpoint c;
    c.algo = to_string(opt_.algo);
    c.options_text = opt_.trajectory_text();
    c.options_fingerprint = checksum64(c.options_text.data(), c.options_text.size());
    c.param_count = n_params_;
    c.centre = z_;
    c.previous_centre = z_prev_;
    c.batch_sizes = sizer_.sizes();
    c.throughput = sizer_.throughput();
    for (bool a : alive_) c.alive.push_back(a ? 1 : 0);
    c.past_warmup = sizer_.past_warmup();
    c.round = round_;
    c.train_seconds = train_s_;
    c.eval_seconds = eval_s_;
    c.evaluations = static_cast<index_t>(result_.evals.size());
    c.best_p1 = result_.best_p1;
    c.time_to_target_s = result_.time_to_target_s;
    c.cursor = source_->state();
    save_checkpoint(opt_.checkpoint_path, c);
    ckpt_s_ += seconds_since(t0);
  }

  // ---------------------------------------------------------------- state
  std::vector<Device*> devs_;
  Communicator& comm_;
  const Dataset& train_;
  const Dataset& test_;
  TrainOptions opt_;
  const TrainCallbacks& cb_;
  int k_;
  BatchSizer sizer_;
  LrScaling scaling_ = LrScaling::kLinear;
  index_t n_ = 0;         // N
  index_t s_ = 0;         // S
  int r_ = 1;             // evaluation period in rounds
  index_t n_params_ = 0;  // layout().total()
  std::vector<bool> alive_;
  std::vector<std::string> failure_;
  std::vector<index_t> total_updates_, total_samples_;
  std::vector<SlotScratch> scratch_;
  std::vector<std::unique_ptr<DeviceWorker>> workers_;
  std::unique_ptr<BatchSource> source_;
  std::vector<float> z_, z_prev_, avg_, tmp_;
  index_t round_ = 0;
  double train_s_ = 0.0, eval_s_ = 0.0, merge_s_ = 0.0, ckpt_s_ = 0.0;
  double loss_since_eval_ = 0.0;
  index_t points_since_eval_ = 0;
  bool target_reached_ = false;
  bool round_running_ = false;
  Clock::time_point round_start_;
  TrainResult result_;
};

}  // namespace

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks) {
  Engine engine(devices, comm, train_set, test_set, options, callbacks);
  return engine.run();
}

TrainResult train(std::vector<std::unique_ptr<Device>>& devices, Communicator& comm,
                  const Dataset& train_set, const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks) {
  std::vector<Device*> raw;
  for (auto& d : devices) raw.push_back(d.get());
  return train(raw, comm, train_set, test_set, options, callbacks);
}

}  // namespace hetsgd
