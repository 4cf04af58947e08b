#include "core/tenancy/throughput_tracker.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hetsgd::tenancy {

ThroughputTracker::ThroughputTracker(Matrix initial, double weight, double drift_threshold)
    : profile_(initial),
      measured_rate_(initial.rows, initial.cols),
      measured_(static_cast<std::size_t>(initial.rows) * initial.cols, false),
      cols_(initial.cols),
      estimate_(std::move(initial)),
      weight_(weight),
      threshold_(drift_threshold) {
  HETSGD_CHECK(weight_ > 0 && weight_ <= 1,
               "throughput EMA weight " << weight_ << " outside (0, 1]");
  HETSGD_CHECK(threshold_ >= 0, "throughput drift threshold " << threshold_ << " < 0");
  reference_ = estimate_;
}

void ThroughputTracker::observe(int i, const std::vector<int>& held, double samples,
                                double seconds) {
  HETSGD_CHECK(i >= 0 && i < estimate_.rows,
               "throughput tracker: tenant " << i << " outside [0, " << estimate_.rows << ")");
  HETSGD_CHECK(static_cast<int>(held.size()) == cols_,
               "throughput tracker: " << held.size() << " types held, expected " << cols_);
  if (seconds <= 0 || !std::isfinite(samples) || samples < 0) return;
  double predicted = 0;
  for (int j = 0; j < cols_; ++j) predicted += std::max(0, held[j]) * estimate_(i, j);
  if (predicted <= 0) return;
  const double factor = samples / seconds / predicted;
  for (int j = 0; j < cols_; ++j) {
    if (held[j] <= 0 || estimate_(i, j) <= 0) continue;
    const double observed = factor * estimate_(i, j);
    const std::size_t k = static_cast<std::size_t>(i) * cols_ + j;
    // The first observation replaces the profile's number outright: the profile may be in other
    // units (a jobs file's nominal rates) and an EMA would mix the two.
    measured_rate_(i, j) =
        measured_[k] ? (1 - weight_) * measured_rate_(i, j) + weight_ * observed : observed;
    measured_[k] = true;
  }
  refresh_row(i);
}

void ThroughputTracker::refresh_row(int i) {
  double log_ratio = 0;
  int count = 0;
  for (int j = 0; j < cols_; ++j) {
    if (measured(i, j) && profile_(i, j) > 0 && measured_rate_(i, j) > 0) {
      log_ratio += std::log(measured_rate_(i, j) / profile_(i, j));
      ++count;
    }
  }
  const double scale = count > 0 ? std::exp(log_ratio / count) : 1.0;
  for (int j = 0; j < cols_; ++j) {
    estimate_(i, j) = measured(i, j) ? measured_rate_(i, j) : profile_(i, j) * scale;
  }
}

double ThroughputTracker::drift() const {
  double worst = 0;
  for (int i = 0; i < estimate_.rows; ++i) {
    double ref_max = 0, est_max = 0;
    for (int j = 0; j < cols_; ++j) {
      ref_max = std::max(ref_max, reference_(i, j));
      est_max = std::max(est_max, estimate_(i, j));
    }
    if (ref_max <= 0 || est_max <= 0) continue;
    for (int j = 0; j < cols_; ++j) {
      worst = std::max(worst, std::abs(estimate_(i, j) / est_max - reference_(i, j) / ref_max));
    }
  }
  return worst;
}

}  // namespace hetsgd::tenancy
