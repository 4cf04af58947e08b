/// \file core/engine/trainer.h
/// The training engine: Adaptive SGD and its baselines on a set of heterogeneous devices
/// (core/engine/README.md), with elasticity, evaluation and checkpoints.
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

#include "core/cluster/cluster.h"
#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/evaluation.h"
#include "core/engine/replica_set.h"
#include "core/engine/run_plan.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/engine/train_state.h"
#include "core/metrics.h"

namespace hetsgd {

/// Optional hooks, all called on the thread that called train().
struct TrainCallbacks {
  std::function<void(const RoundRecord&)> on_round;  ///< after every merge
  std::function<void(const EvalRecord&)> on_eval;    ///< after every evaluation
  /// When set and true, the run stops at the next batch boundary (e.g. on SIGINT), merges,
  /// evaluates and writes its checkpoint, with StopReason::kInterrupted.
  const std::atomic<bool>* stop = nullptr;
  /// When set, a final evaluation whose exact scoring would exceed kFinalEvalFlops ranks every
  /// test row through this approximate search instead (core/engine/evaluation.h); the
  /// commands set it to kernels' indexed_topk (kernels/replicas.h: label clusters).
  IndexedTopk indexed_topk;
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

}  // namespace hetsgd
