/// \file core/engine/selection.h
/// Model selection on validation data (DESIGN §6): keep-best and early stopping.
///
/// Every evaluation offers the centre with its validation P@1. The selector keeps a copy of
/// the best centre (strictly higher P@1 wins, so ties keep the earlier, cheaper model) and
/// counts evaluations since it improved; `patience` of them without improvement stops the
/// run. Without a validation set nothing is selected: the last centre is the model.
/// The test set never reaches the selector.
#pragma once

#include <vector>

#include "core/engine/train_options.h"
#include "core/engine/train_state.h"
#include "core/metrics.h"

namespace hetsgd {

/// Keep-best and patience over one run; its state lives in the TrainState.
class ModelSelector {
 public:
  /// Works on `state` (best_* fields), which must outlive the selector.
  ModelSelector(const TrainOptions& options, TrainState* state);
  /// Offers the centre `z` evaluated at `val` (validation metrics) and `test` (reported only)
  /// in round `round`. Returns true when it became the best.
  bool offer(const std::vector<float>& z, const RankingMetrics& val, const RankingMetrics& test,
             index_t round);
  /// True once `patience` evaluations in a row did not improve (patience 0: never).
  bool out_of_patience() const;

 private:
  const TrainOptions& options_;
  TrainState* state_;
};

}  // namespace hetsgd
