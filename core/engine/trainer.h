/// \file core/engine/trainer.h
/// The training engine: Adaptive SGD and its baselines on a set of heterogeneous devices
/// (DESIGN §6, ALGORITHMS §2-4), with elasticity, evaluation and checkpoints.
///
/// One scheduler (the calling thread) and one worker thread per device. Work is organised in
/// rounds of about S points:
/// - `adaptive`: every device pulls batches of its own size b_i from one shared cursor until
///   the round's quota is handed out (fast devices take more), trains its replica with
///   lr_i = lr0 * s(b_i / b0) * decay, then a barrier, a normalised merge
///   A = sum p_i W_i, the centre update Z' = Z + alpha (A - Z) + mu (Z - Z_prev), replicas
///   restart from Z' (or are pulled by beta), and the batch policy resizes b_i.
/// - `sync`: steps of a global batch B = K * b0 split into K equal shares; each device computes
///   the gradient of its share scaled by share / B, the Communicator sums them, every replica
///   applies the same update (one identical step = single-device SGD on B points).
/// - `avg`: each device trains S / K points in batches of b0; uniform average; restart.
/// - `easgd`: every tau local steps (batches of b0), W_i <- W_i - a (W_i - Z) and
///   Z <- Z + a sum_i (W_i - Z), synchronously.
/// Elasticity: a device whose call throws is removed (its in-flight batch goes back to the
/// cursor, merge weights renormalise over the rest); the run throws hetsgd::Error, listing
/// every device's message, only when no device is left.
///
/// Threads: train() blocks; callbacks run on the calling thread. Devices must not be used by
/// anyone else during train(). Times are steady-clock wall seconds; "training time" excludes
/// evaluation and checkpoint writing.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/dist/cluster.h"
#include "core/engine/replica_set.h"
#include "core/engine/train_options.h"
#include "core/engine/train_state.h"
#include "core/metrics.h"

namespace hetsgd {

/// One round (between two merges), reported after its merge.
struct RoundRecord {
  index_t round = 0;        ///< 1-based index of the round just finished
  double time_s = 0.0;      ///< training time at its end (cumulative, evaluation excluded)
  double epoch = 0.0;       ///< points consumed / N
  index_t samples = 0;      ///< points consumed so far (T)
  double train_loss = 0.0;  ///< mean training loss of the round's batches
  double merge_s = 0.0;     ///< seconds spent merging in this round
  std::vector<DeviceRoundStats> devices;  ///< per device slot (zeros for failed slots)
  std::vector<double> weights;            ///< merge weights p_i per slot (0 for failed)
};

/// One evaluation of the centre model: a point of the P@1-vs-time curve.
struct EvalRecord {
  double time_s = 0.0;                  ///< training time when evaluated (evaluation excluded)
  double eval_s = 0.0;                  ///< duration of this evaluation
  double eval_total_s = 0.0;            ///< all evaluation time so far, this one included
  double epoch = 0.0;                   ///< points consumed / N
  index_t round = 0;                    ///< rounds completed
  index_t samples = 0;                  ///< points consumed (T)
  double train_loss = 0.0;              ///< mean training loss since the previous evaluation
  RankingMetrics metrics;               ///< test P@1..5, nDCG@1..5 and test loss (metrics.loss)
  bool has_val = false;                 ///< a validation set was evaluated too
  RankingMetrics val_metrics;           ///< validation metrics (selection uses these only)
  bool best = false;                    ///< the best validation P@1 so far (the selected model)
  std::vector<index_t> device_updates;  ///< cumulative updates per device slot
  std::vector<index_t> device_batch;    ///< current batch size per device slot
  int devices_alive = 0;                ///< devices still training
};

/// Final state of one device slot.
struct DeviceSummary {
  std::string name;         ///< Device::name()
  DeviceId id;              ///< Device::id()
  bool alive = true;        ///< false once removed after a failure
  std::string failure;      ///< what() of the exception that removed it
  index_t updates = 0;      ///< total updates
  index_t samples = 0;      ///< total points trained
  index_t batch_size = 0;   ///< final b_i
  double throughput = 0.0;  ///< smoothed points/s while busy
  double busy_s = 0.0;      ///< seconds busy training in this run (a resumed run's part only)
  int rank = 0;             ///< the node (MPI rank) the device belongs to
};

/// Why a run stopped.
enum class StopReason {
  kTimeBudget,
  kMaxEpochs,
  kMaxRounds,
  kTarget,
  kInterrupted,
  kNoImprovement,  ///< `patience` evaluations without a better validation P@1
};
/// "time budget", "max epochs", "max rounds", "target reached", "interrupted",
/// "no improvement".
const char* to_string(StopReason reason);

/// Everything a run produced.
struct TrainResult {
  Algo algo = Algo::kAdaptive;         ///< algorithm that ran
  std::vector<EvalRecord> evals;       ///< every evaluation, in order (the curve)
  std::vector<RoundRecord> rounds;     ///< every round, in order
  std::vector<DeviceSummary> devices;  ///< per device slot
  /// Final centre model Z (layout().total() floats; empty without
  /// TrainOptions::keep_final_state).
  std::vector<float> centre;
  /// The selected model: the centre of the best validation evaluation (keep_best with a
  /// validation set), else the final centre. This is what a user saves.
  std::vector<float> model;
  /// Test metrics of the selected model (the last evaluation's without a validation set).
  RankingMetrics final_metrics;
  bool has_val = false;             ///< selection used a validation set
  RankingMetrics val_metrics;       ///< validation metrics of the selected model
  index_t selected_round = 0;       ///< round at which the selected model was evaluated
  double train_seconds = 0.0;       ///< training wall time (merges included, evaluation not)
  double eval_seconds = 0.0;        ///< evaluation wall time
  double merge_seconds = 0.0;       ///< part of train_seconds spent merging / all-reducing
  double checkpoint_seconds = 0.0;  ///< time spent writing checkpoints
  index_t samples = 0;              ///< points consumed (T)
  double epochs = 0.0;              ///< T / N
  index_t rounds_done = 0;          ///< rounds completed (including those before a resume)
  index_t round_samples = 0;        ///< S of the last round (TrainOptions::merge_budget)
  double time_to_target_s =
      -1.0;  ///< training time of the first eval with P@1 >= target (-1: never)
  /// The highest TEST P@1 of any evaluation: an oracle (chosen on the test set), reported for
  /// reference only and labelled as such; nothing is selected by it.
  double best_p1 = 0.0;
  StopReason stop = StopReason::kMaxEpochs;  ///< why the run ended
  bool resumed = false;  ///< continued a saved state (options.resume_path or a given state)
  /// Nodes (MPI ranks) that trained; `devices` lists every node's devices, by rank. Only rank
  /// 0 evaluates: `evals` and the metrics are empty on the other ranks.
  int ranks = 1;
  /// The final state: hand it to train() again to continue (TrainingJob does), or save it.
  TrainState state;
  /// Points per second of training time (0 before any training).
  double samples_per_second() const {
    return train_seconds > 0.0 ? static_cast<double>(samples) / train_seconds : 0.0;
  }
};

/// Optional hooks, all called on the thread that called train().
struct TrainCallbacks {
  std::function<void(const RoundRecord&)> on_round;  ///< after every merge
  std::function<void(const EvalRecord&)> on_eval;    ///< after every evaluation
  /// When set and true, the run stops at the next batch boundary (e.g. on SIGINT), merges,
  /// evaluates and writes its checkpoint, with StopReason::kInterrupted.
  const std::atomic<bool>* stop = nullptr;
};

/// The data of one run. `val` (optional) is what every selection uses: keep-best, patience
/// and stopping at the target P@1; `test` is evaluated alongside for reporting only. Without
/// `val`, the target and the curve use `test` and the last centre is the model.
struct TrainData {
  const Dataset* train = nullptr;  ///< training set (required)
  const Dataset* test = nullptr;   ///< test set (required; reported only when val is set)
  const Dataset* val = nullptr;    ///< validation set (optional)
  /// The ranks of a job across servers, each one node with its own devices (null: this process
  /// alone). Every rank calls train() with the same options and data; rank 0 evaluates.
  Cluster* cluster = nullptr;
};

/// train() on a TrainData (see the overload below for the rest of the contract).
TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const TrainData& data,
                  const TrainOptions& options, TrainState initial = {},
                  const TrainCallbacks& callbacks = {});

/// Trains a model on `devices` (all holding replicas of one ModelConfig, K >= 1) with the
/// algorithm and options given; evaluates the centre on `test`. The starting point is
/// `initial` when it is not empty (a state handed back by an earlier run: same trajectory
/// options, same model), else the checkpoint options.resume_path names, else the current
/// parameters of devices[0] (broadcast to all). Per-device state (batch size, throughput,
/// optimiser, liveness) is matched to the devices by their text id; devices without a saved
/// slot start fresh, with the optimiser state of the first matched slot when there is one.
/// The time budget and the epoch limit count from the start of the whole run (state
/// included). Throws InvalidArgument on bad options or shapes, IoError on checkpoint trouble,
/// Error when every device failed.
TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options, TrainState initial,
                  const TrainCallbacks& callbacks = {});

/// train() from options.resume_path or a fresh start.
TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks = {});

/// Same, for owned devices.
TrainResult train(std::vector<std::unique_ptr<Device>>& devices, Communicator& comm,
                  const Dataset& train_set, const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks = {});

/// Global batches (K * b0 points) a round holds at least when round_samples = 0 (auto).
inline constexpr index_t kMinBatchesPerRound = 8;

/// The S a run of `options` uses on `num_devices` devices and `num_points` training points
/// (resolves round_samples = 0: max(N / 16, kMinBatchesPerRound * K * b0), capped at N).
index_t resolve_round_samples(const TrainOptions& options, int num_devices, index_t num_points);
/// The evaluation period R in rounds (resolves eval_every_rounds = 0).
int resolve_eval_every(const TrainOptions& options, index_t round_samples, index_t num_points);

}  // namespace hetsgd
