/// \file core/tenancy/throughput_tracker.h
/// Online refresh of the throughput matrix s (ALGORITHMS §6): an exponential moving average of
/// what jobs actually achieve on the devices they hold, and the drift test that triggers a new
/// allocation.
///
/// Attribution: a round reports one number per tenant (samples over seconds) for a job that may
/// hold devices of several types. The observed rate is split over the held types in proportion
/// to the current estimates (observed / predicted is applied as a common factor to every held
/// type); types not held that round keep their estimate. With a single held type this is the
/// plain per-device rate.
#pragma once

#include <vector>

#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// EMA estimate of s (tenants x types) with a drift test against the matrix last used.
class ThroughputTracker {
 public:
  /// Starts from `initial` (n x m, samples/s per device); EMA weight `weight` in (0, 1] given to
  /// each new observation (0.5 by default, as the batch-size EMA); recompute when drift exceeds
  /// `drift_threshold` (relative, see drift()).
  explicit ThroughputTracker(Matrix initial, double weight = 0.5, double drift_threshold = 0.2);

  /// Folds in one round of tenant `i`: `held[j]` devices of type j, `samples` processed in
  /// `seconds`. Ignored when nothing was held, seconds <= 0, or the prediction is 0.
  void observe(int i, const std::vector<int>& held, double samples, double seconds);
  /// The current estimate.
  const Matrix& estimate() const { return estimate_; }
  /// max over (i, j) of |estimate_ij - reference_ij| / max_j reference_ij: the change since the
  /// allocation was last computed, relative to each tenant's best type.
  double drift() const;
  /// True when drift() > threshold.
  bool needs_recompute() const { return drift() > threshold_; }
  /// Declares that an allocation was computed from estimate(): it becomes the reference.
  void mark_recomputed() { reference_ = estimate_; }

 private:
  Matrix estimate_;
  Matrix reference_;
  double weight_;
  double threshold_;
};

}  // namespace hetsgd::tenancy
