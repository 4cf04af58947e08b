/// \file core/tenancy/throughput_tracker.h
/// Online refresh of the throughput matrix s (core/tenancy/README.md): an exponential moving
/// average of what jobs actually achieve on the devices they hold, and the drift test that triggers
/// a new allocation.
///
/// Measured and unmeasured entries: each (tenant, type) entry is either measured (the tenant's
/// job ran on that type in some round) or not. A measured entry is the EMA of its observations.
/// An unmeasured entry keeps the profile's value scaled by the tenant's measured/profile ratio
/// (geometric mean over its measured entries), so a job that simply runs faster or slower than
/// profiled everywhere keeps the profile's relative speeds: its normalised row, which is all the
/// policies see, does not move, and nothing is recomputed for it.
///
/// Attribution: a round reports one number per tenant (samples over seconds). With one type held
/// it is that type's per-device rate. With several types held, the observed / predicted factor is
/// applied to every held type (the split between them cannot be observed); those entries then
/// count as measured.
///
/// Drift is measured on normalised rows (v_ij = s_ij / max_j s_ij), so only a change of a tenant's
/// relative speeds triggers a recompute.
#pragma once

#include <vector>

#include "core/tenancy/matrix.h"

namespace hetsgd::tenancy {

/// EMA estimate of s (tenants x types) with a drift test against the matrix last used.
class ThroughputTracker {
 public:
  /// Starts from the profile `initial` (n x m, samples/s per device); EMA weight `weight` in
  /// (0, 1] given to each new observation (0.5 by default, as the batch-size EMA); recompute when
  /// drift exceeds `drift_threshold` (see drift()).
  explicit ThroughputTracker(Matrix initial, double weight = 0.5, double drift_threshold = 0.2);

  /// Folds in one round of tenant `i`: `held[j]` devices of type j, `samples` processed in
  /// `seconds`. Ignored when nothing was held, seconds <= 0, samples is not finite or negative,
  /// or the prediction is 0.
  void observe(int i, const std::vector<int>& held, double samples, double seconds);
  /// The current estimate (measured entries, and unmeasured ones from the scaled profile).
  const Matrix& estimate() const { return estimate_; }
  /// True when entry (i, j) has been measured.
  bool measured(int i, int j) const { return measured_[static_cast<std::size_t>(i) * cols_ + j]; }
  /// max over (i, j) of |v_ij(estimate) - v_ij(reference)|, v the row-normalised matrix: the
  /// change of relative speeds since the allocation was last computed.
  double drift() const;
  /// True when drift() > threshold.
  bool needs_recompute() const { return drift() > threshold_; }
  /// Declares that an allocation was computed from estimate(): it becomes the reference.
  void mark_recomputed() { reference_ = estimate_; }

 private:
  void refresh_row(int i);

  Matrix profile_;
  Matrix measured_rate_;
  std::vector<bool> measured_;
  int cols_;
  Matrix estimate_;
  Matrix reference_;
  double weight_;
  double threshold_;
};

}  // namespace hetsgd::tenancy
