// The run's plan: how many points a round holds, how often the centre is evaluated, and the
// names of the stopping reasons (declared in train_result.h).
#include "core/engine/run_plan.h"

#include <algorithm>
#include <cmath>

#include "core/engine/train_result.h"

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
    case StopReason::kNoImprovement:
      return "no improvement";
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

}  // namespace hetsgd
