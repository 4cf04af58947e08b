/// \file core/engine/selection.h
/// Model selection on validation data (core/engine/README.md): keep-best and early stopping.
///
/// Every evaluation offers the centre with its validation metrics. The selector keeps a copy of
/// the centre with the best P@1+P@3+P@5 (RankingMetrics::p135(), the criterion the calibration
/// grids use too; strictly higher wins, so ties keep the earlier, cheaper model) and
/// counts evaluations since it improved; `patience` of them without improvement stops the
/// run. Without a validation set nothing is selected: the last centre is the model.
/// The test set never reaches the selector.
///
/// The copy lives in TrainState::best_centre, or, with TrainOptions::best_model_file, in that
/// file: a whole model less in memory for the whole run, paid for by one write per
/// improvement, except at an evaluation the run ends after (offer()'s `last`). The selector
/// removes its file when it is destroyed.
#pragma once

#include <cstddef>
#include <vector>

#include "core/engine/checkpoint.h"
#include "core/engine/train_options.h"
#include "core/engine/train_state.h"
#include "core/metrics.h"

namespace hetsgd {

/// Keep-best and patience over one run; its state lives in the TrainState.
class ModelSelector {
 public:
  /// Works on `state` (best_* fields), which must outlive the selector.
  ModelSelector(const TrainOptions& options, TrainState* state);
  ~ModelSelector();
  ModelSelector(const ModelSelector&) = delete;
  ModelSelector& operator=(const ModelSelector&) = delete;

  /// Offers the centre `z` evaluated at `val` (validation metrics) and `test` (reported only)
  /// in round `round`. Returns true when it became the best. `last`: the run ends after this
  /// evaluation with `z` as it is, so a new best is not copied and an earlier copy is dropped
  /// (has_model() is then false: the caller's centre is the model).
  bool offer(const std::vector<float>& z, const RankingMetrics& val, const RankingMetrics& test,
             index_t round, bool last = false);
  /// True once `patience` evaluations in a row did not improve (patience 0: never).
  bool out_of_patience() const;

  /// Moves a best centre that `state` holds in memory (a resumed run's) to the file, when
  /// the options name one.
  void adopt_state();
  /// True when a copy of the best centre is kept (in memory or in the file).
  bool has_model() const;
  /// A copy of the best centre (empty when none is kept), for a checkpoint.
  std::vector<float> copy_model() const;
  /// The best centre (empty when none is kept); the selector no longer holds it afterwards.
  std::vector<float> take_model();
  /// The best centre streamed from where it is kept (memory or file), for a checkpoint.
  StreamedFloats stream_model() const;

 private:
  void spill(const std::vector<float>& z);
  std::vector<float> read_file() const;
  void read_file(const FloatSink& sink) const;
  void remove_file();

  const TrainOptions& options_;
  TrainState* state_;
  bool in_file_ = false;  // the best centre is in options_.best_model_file, not in the state
  std::size_t file_floats_ = 0;
};

}  // namespace hetsgd
