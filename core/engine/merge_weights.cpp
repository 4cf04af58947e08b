#include "core/engine/merge_weights.h"

#include <tbb/parallel_for.h>

#include "core/error.h"

namespace hetsgd {

std::vector<double> merge_weights(MergeWeights kind, const std::vector<index_t>& updates,
                                  const std::vector<index_t>& samples,
                                  const std::vector<bool>& active) {
  const size_t k = active.size();
  HETSGD_CHECK(updates.size() == k && samples.size() == k,
               "merge_weights: " << updates.size() << " update counts, " << samples.size()
                                 << " sample counts, " << k << " devices");
  std::vector<double> w(k, 0.0);
  size_t live = 0;
  for (size_t i = 0; i < k; ++i) live += active[i] ? 1 : 0;
  HETSGD_CHECK(live > 0, "merge_weights: no active device");
  double total = 0.0;
  for (size_t i = 0; i < k; ++i) {
    if (!active[i]) continue;
    switch (kind) {
      case MergeWeights::kUpdates:
        w[i] = static_cast<double>(updates[i]);
        break;
      case MergeWeights::kSamples:
        w[i] = static_cast<double>(samples[i]);
        break;
      case MergeWeights::kUniform:
        w[i] = 1.0;
        break;
    }
    total += w[i];
  }
  if (total <= 0.0) {
    // Nothing trained this round (e.g. the budget ran out at its start): every active replica
    // still equals the centre, so any normalised weights give the same average.
    for (size_t i = 0; i < k; ++i) w[i] = active[i] ? 1.0 : 0.0;
    total = static_cast<double>(live);
  }
  for (double& x : w) x /= total;
  return w;
}

void update_centre(float* z, float* z_prev, const float* avg, index_t n, double alpha, double mu) {
  tbb::parallel_for(tbb::blocked_range<index_t>(0, n, 1 << 14),
                    [&](const tbb::blocked_range<index_t>& r) {
                      for (index_t k = r.begin(); k < r.end(); ++k) {
                        const double zk = z[k];
                        const double next = zk + alpha * (static_cast<double>(avg[k]) - zk) +
                                            mu * (zk - static_cast<double>(z_prev[k]));
                        z_prev[k] = z[k];
                        z[k] = static_cast<float>(next);
                      }
                    });
}

void pull_towards(float* w, const float* z, index_t n, double beta) {
  tbb::parallel_for(tbb::blocked_range<index_t>(0, n, 1 << 14),
                    [&](const tbb::blocked_range<index_t>& r) {
                      for (index_t k = r.begin(); k < r.end(); ++k) {
                        const double wk = w[k];
                        w[k] = static_cast<float>(wk + beta * (static_cast<double>(z[k]) - wk));
                      }
                    });
}

}  // namespace hetsgd
