#include "core/engine/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hetsgd {

double batch_lr_scale(LrScaling scaling, index_t batch, index_t b0) {
  const double ratio = static_cast<double>(batch) / static_cast<double>(b0);
  switch (scaling) {
    case LrScaling::kLinear:
      return ratio;
    case LrScaling::kSqrt:
      return std::sqrt(ratio);
    case LrScaling::kNone:
      return 1.0;
    case LrScaling::kAuto:
      break;
  }
  HETSGD_FAIL("batch_lr_scale needs a resolved LrScaling, got auto");
}

bool in_warmup(const TrainOptions& options, index_t samples_seen, index_t num_points) {
  return static_cast<double>(samples_seen) <
         options.warmup_epochs * static_cast<double>(num_points);
}

double decay_unit(const TrainOptions& options, index_t num_points, index_t label_entries,
                  index_t num_labels) {
  const double n = static_cast<double>(num_points);
  const double floor = std::max(n, static_cast<double>(options.decay_min_points));
  if (options.decay_visits <= 0.0 || label_entries <= 0) return floor;
  const double visits = static_cast<double>(label_entries) / static_cast<double>(num_labels);
  return std::max(floor, n * options.decay_visits / visits);
}

double pass_epochs(const TrainOptions& options, const Dataset& train) {
  if (train.rows() <= 0) return 1.0;
  return decay_unit(options, train.rows(), train.label_nnz(), train.num_labels) /
         static_cast<double>(train.rows());
}

double learning_rate(const TrainOptions& options, LrScaling scaling, index_t batch,
                     index_t samples_seen, index_t num_points, double unit) {
  const double base = options.lr0 * batch_lr_scale(scaling, batch, options.b0);
  const double n = static_cast<double>(std::max<index_t>(num_points, 1));
  const double t = static_cast<double>(samples_seen);
  if (in_warmup(options, samples_seen, num_points)) {
    const double frac = t / (options.warmup_epochs * n);
    return base * (options.warmup_start + (1.0 - options.warmup_start) * frac);
  }
  // The clock's unit is at least an epoch; the warm-up, in epochs, is converted to it.
  const double u = std::max(n, unit);
  const double e = std::floor(t / u);
  return base / (1.0 + options.lambda * std::max(0.0, e - options.warmup_epochs * n / u));
}

}  // namespace hetsgd
