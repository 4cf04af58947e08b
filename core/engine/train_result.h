/// \file core/engine/train_result.h
/// What a training run reports: its rounds, its evaluations (the P@1-vs-time curve), the
/// final state of every device slot, why it stopped, and the TrainResult that holds them all.
/// Helpers that build or read these (slot_transfer, node_run, summary_json) include this file,
/// not trainer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/engine/device_round_stats.h"
#include "core/engine/train_options.h"
#include "core/engine/train_state.h"
#include "core/metrics.h"
#include "core/types.h"

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
  double time_s = 0.0;         ///< training time when evaluated (evaluation excluded)
  double eval_s = 0.0;         ///< duration of this evaluation
  double eval_total_s = 0.0;   ///< all evaluation time so far, this one included
  double epoch = 0.0;          ///< points consumed / N
  index_t round = 0;           ///< rounds completed
  index_t samples = 0;         ///< points consumed (T)
  double train_loss = 0.0;     ///< mean training loss since the previous evaluation
  RankingMetrics metrics;      ///< test P@1..5, nDCG@1..5 and test loss (metrics.loss)
  bool has_val = false;        ///< a validation set was evaluated too
  RankingMetrics val_metrics;  ///< validation metrics (selection uses these only)
  bool best = false;           ///< the best validation P@1+P@3+P@5 so far (the selected model)
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
  kNoImprovement,  ///< `patience` evaluations without a better validation P@1+P@3+P@5
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
  /// Test rows behind final_metrics: all of them, or the bounded sample of the evaluation plan
  /// (core/engine/evaluation.h); 0 when no evaluation ran.
  index_t final_eval_rows = 0;
  index_t eval_sample_rows = 0;  ///< test rows each in-training evaluation scored
  /// The final evaluation was left to the caller (TrainOptions::defer_final_eval):
  /// final_metrics are still those of the sample until it runs.
  bool final_eval_deferred = false;
  /// True when final_metrics were ranked through an approximate search that scores its
  /// candidates exactly (core/engine/evaluation.h); exact_sample then holds the exact metrics
  /// of its first index_recall.rows test rows.
  bool final_indexed = false;
  /// The search's recall@1..5 against the exact top-k on the first index_recall.rows test
  /// rows, at search level index_level (the one used, or the last one tried), when the final
  /// evaluation tried a search (rows 0: it did not); below kMinIndexRecall it was not used.
  TopkRecall index_recall;
  int index_level = -1;
  RankingMetrics exact_sample;
  /// With final_eval_deferred: the selected model's exact top-k lists of the in-training
  /// sample's test rows (eval_sample_rows x k, with their metrics in exact_sample), for the
  /// deferred evaluation's recall; empty when no search is planned.
  std::vector<col_t> sample_topk;
  bool has_val = false;             ///< selection used a validation set
  RankingMetrics val_metrics;       ///< validation metrics of the selected model
  index_t selected_round = 0;       ///< round at which the selected model was evaluated
  double train_seconds = 0.0;       ///< training wall time (merges included, evaluation not)
  double eval_seconds = 0.0;        ///< evaluation wall time
  double merge_seconds = 0.0;       ///< part of train_seconds spent merging / all-reducing
  double checkpoint_seconds = 0.0;  ///< time spent writing checkpoints
  int checkpoint_failures = 0;      ///< checkpoints that could not be written (reported on stderr)
  index_t samples = 0;              ///< points consumed (T)
  double epochs = 0.0;              ///< T / N
  index_t rounds_done = 0;          ///< rounds completed (including those before a resume)
  index_t round_samples = 0;        ///< S of the last round (TrainOptions::merge_budget)
  /// Messages that carried the other ranks' device slots to rank 0 for checkpoints (rank 0:
  /// received; the others: sent), at most HETSGD_GATHER_CHUNK bytes each (core/cluster/).
  std::int64_t checkpoint_chunks = 0;
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

}  // namespace hetsgd
