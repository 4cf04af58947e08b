/// \file core/engine/training_evaluations.h
/// The evaluations of a training run (core/engine/README.md §Rounds, §Evaluation and
/// selection), as the run loop (run_loop.h) calls them: which rounds are evaluated (the period
/// R, lengthened when the evaluated sets are samples of a large label space), the scoring of
/// the centre on the test and validation rows with its offer to keep-best, the exact top-k
/// lists of the test sample that the final indexed evaluation reuses, and that final
/// evaluation of the selected model. Internal to the engine.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dataset.h"
#include "core/engine/centre.h"
#include "core/engine/replica_set.h"
#include "core/engine/selection.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/engine/trainer.h"
#include "core/model_config.h"

namespace hetsgd {

class TrainingEvaluations {
 public:
  /// `train`, `test` and `val` (null: none) must outlive this object; `config` is the
  /// replicas' model.
  TrainingEvaluations(const TrainOptions& options, const TrainCallbacks& callbacks,
                      const ModelConfig& config, const Dataset& train, const Dataset& test,
                      const Dataset* val);

  // ---------------------------------------------------------------- pacing
  /// Sets S, the points of a round, and recomputes the period for it (at the start and when
  /// S grows: the same share of each epoch).
  void set_round_samples(index_t round_samples);
  /// R: rounds between in-training evaluations. eval_every_rounds when given; else
  /// resolve_eval_every(), lengthened when the evaluated sets are samples so that their
  /// evaluations take at most kEvalShare of the training, both costs in flops.
  int period() const { return r_; }
  /// Starts counting at `round` (0, or a resumed run's round): the last periodic evaluation is
  /// taken at the period's last multiple, as the uninterrupted run had it.
  void start_at(std::int64_t round) { last_eval_round_ = round - round % r_; }
  /// True when `round` is R or more rounds past the last periodic evaluation.
  bool due(std::int64_t round) const { return round - last_eval_round_ >= r_; }
  /// `round` had its periodic evaluation.
  void evaluated(std::int64_t round) { last_eval_round_ = round; }

  // ---------------------------------------------------------------- scoring
  /// Scores the centre of `round` (through evaluate_centre(), on its in-training rows) on the
  /// test set and the validation set, offers it to `selector` (`last`: the run returns this
  /// centre as evaluated, see ModelSelector::offer) and keeps the test sample's exact top-k
  /// lists when a final indexed evaluation will want them. Returns the record's metrics,
  /// has_val, val_metrics and best; the caller fills the rest.
  EvalRecord score_centre(ReplicaSet& reps, Centre& centre, bool swap,
                          const std::vector<double>& throughput, ModelSelector& selector,
                          std::int64_t round, bool last);
  /// When the in-training evaluations saw a sample of the test set, scores `result->model`
  /// (the selected model of round `result->selected_round`) once on the whole of it, exactly
  /// or through the search, and fills `result`'s final evaluation fields. `root`: this rank
  /// evaluates.
  void evaluate_selected(ReplicaSet& reps, const std::vector<double>& throughput, bool root,
                         TrainResult* result);

 private:
  // The exact top-k lists of an in-training evaluation's test sample, for the final indexed
  // evaluation of the same model (IndexedEval::exact_topk).
  struct SampleTopk {
    std::int64_t round = -1;
    std::vector<col_t> labels;
    RankingMetrics metrics;
  };

  int paced_eval_every() const;
  index_t val_rows() const { return val_ != nullptr ? val_->rows() : 0; }

  const TrainOptions& opt_;
  const TrainCallbacks& cb_;
  ModelConfig config_;
  const Dataset& train_;
  const Dataset& test_;
  const Dataset* val_;
  index_t s_ = 0;                     // S
  int r_ = 1;                         // R
  std::int64_t last_eval_round_ = 0;  // round of the last periodic evaluation
  std::vector<float> inv_prop_;       // inverse propensities of the training labels (PSP@k)
  // The last evaluation's and the best one's (keep-best may select an earlier model).
  SampleTopk last_sample_, best_sample_;
};

}  // namespace hetsgd
