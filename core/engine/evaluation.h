/// \file core/engine/evaluation.h
/// Evaluation of a model replica on a test set: P@1/3/5, nDCG@1/3/5 and the mean loss.
#pragma once

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/centre.h"
#include "core/engine/replica_set.h"
#include "core/metrics.h"

namespace hetsgd {

/// Runs `device`'s current parameters over `test` (its first `max_points` rows, 0 = all) in
/// chunks of `batch_rows`, asking for the top `k` labels (k >= 5 for the @5 metrics). Returns
/// finished means; `loss` is the row-weighted mean of predict_topk's losses. Call from the
/// thread that drives `device` (or while its worker is idle). With `inv_propensity`
/// (core/metrics.h) the propensity-scored metrics are computed too.
RankingMetrics evaluate(Device& device, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points = 0, const std::vector<float>* inv_propensity = nullptr);

/// Evaluates the centre Z on the alive slot with the highest `throughput` (ties: lowest
/// slot). When `swap` is set the replica is saved, Z written in, and the replica restored
/// after. A device that fails here is removed like a failed step and the next one is tried;
/// throws Error when none is left. Runs on the chosen slot's worker thread.
RankingMetrics evaluate_centre(ReplicaSet& replicas, Centre& centre, bool swap,
                               const std::vector<double>& throughput, const Dataset& test, int k,
                               index_t batch_rows, index_t max_points);

}  // namespace hetsgd
