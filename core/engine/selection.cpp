#include "core/engine/selection.h"

namespace hetsgd {

ModelSelector::ModelSelector(const TrainOptions& options, TrainState* state)
    : options_(options), state_(state) {}

bool ModelSelector::offer(const std::vector<float>& z, const RankingMetrics& val,
                          const RankingMetrics& test, index_t round) {
  TrainState& s = *state_;
  if (s.has_best && val.p_at(1) <= s.best_val.p_at(1)) {
    ++s.evals_since_best;
    return false;
  }
  s.has_best = true;
  s.best_val = val;
  s.best_test = test;
  s.best_round = round;
  s.evals_since_best = 0;
  // A copy per improvement: improvements get rarer as training goes, and the copy is what
  // makes the saved model the selected one rather than the last.
  if (options_.keep_best) s.best_centre = z;
  return true;
}

bool ModelSelector::out_of_patience() const {
  return options_.patience > 0 && state_->has_best && state_->evals_since_best >= options_.patience;
}

}  // namespace hetsgd
