#include "core/tenancy/throughput_tracker.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hetsgd::tenancy {

ThroughputTracker::ThroughputTracker(Matrix initial, double weight, double drift_threshold)
    : estimate_(std::move(initial)), weight_(weight), threshold_(drift_threshold) {
  HETSGD_CHECK(weight_ > 0 && weight_ <= 1,
               "throughput EMA weight " << weight_ << " outside (0, 1]");
  HETSGD_CHECK(threshold_ >= 0, "throughput drift threshold " << threshold_ << " < 0");
  reference_ = estimate_;
}

void ThroughputTracker::observe(int i, const std::vector<int>& held, double samples,
                                double seconds) {
  HETSGD_CHECK(i >= 0 && i < estimate_.rows,
               "throughput tracker: tenant " << i << " outside [0, " << estimate_.rows << ")");
  HETSGD_CHECK(static_cast<int>(held.size()) == estimate_.cols,
               "throughput tracker: " << held.size() << " types held, expected " << estimate_.cols);
  if (seconds <= 0 || !std::isfinite(samples) || samples < 0) return;
  double predicted = 0;
  for (int j = 0; j < estimate_.cols; ++j) predicted += held[j] * estimate_(i, j);
  if (predicted <= 0) return;
  const double factor = samples / seconds / predicted;
  for (int j = 0; j < estimate_.cols; ++j) {
    if (held[j] <= 0) continue;
    estimate_(i, j) = (1 - weight_) * estimate_(i, j) + weight_ * factor * estimate_(i, j);
  }
}

double ThroughputTracker::drift() const {
  double worst = 0;
  for (int i = 0; i < estimate_.rows; ++i) {
    double ref_max = 0;
    for (int j = 0; j < estimate_.cols; ++j) ref_max = std::max(ref_max, reference_(i, j));
    if (ref_max <= 0) continue;
    for (int j = 0; j < estimate_.cols; ++j) {
      worst = std::max(worst, std::abs(estimate_(i, j) - reference_(i, j)) / ref_max);
    }
  }
  return worst;
}

}  // namespace hetsgd::tenancy
