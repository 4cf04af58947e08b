#include "core/engine/round.h"

#include <algorithm>
#include <chrono>

#include "core/engine/lr_schedule.h"
#include "core/engine/merge_weights.h"
#include "core/error.h"

namespace hetsgd {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

void train_batch(RoundContext& ctx, int slot, const std::vector<index_t>& rows, index_t seen,
                 index_t lr_batch) {
  SlotScratch& s = ctx.replicas.scratch(slot);
  const auto t0 = Clock::now();
  const auto b = static_cast<index_t>(rows.size());
  const double lr =
      learning_rate(ctx.options, ctx.scaling, lr_batch, seen, ctx.num_points, ctx.decay_unit);
  gather_rows(ctx.train, rows.data(), b, &s.batch);
  const float loss = ctx.replicas.device(slot).train_step(s.batch, static_cast<float>(lr));
  s.stats.busy_s += seconds_since(t0);
  s.stats.updates += 1;
  s.stats.samples += b;
  s.stats.batch_size = b;
  s.stats.lr = lr;
  s.loss_sum += static_cast<double>(loss) * static_cast<double>(b);
}

bool local_step(RoundContext& ctx, int slot, index_t b, index_t lr_batch, const TakeFn& take) {
  // The epoch limit and the round's quota are the cursor's: one claim checks both and hands
  // out the points (across nodes, in one remote operation).
  if (b <= 0 || ctx.out_of_budget() || !take(b)) return false;
  SlotScratch& s = ctx.replicas.scratch(slot);
  // `seen` is T before this batch: the learning-rate schedule (warm-up, decay) follows the
  // points the whole run consumed, not this device's own count.
  index_t seen = 0;
  if (!ctx.source.claim(b, &s.rows, &seen)) return false;
  try {
    train_batch(ctx, slot, s.rows, seen, lr_batch);
  } catch (...) {
    ctx.source.release(s.rows);
    throw;
  }
  return true;
}

bool centre_follows_replica(const TrainOptions& o, const ReplicaSet& replicas,
                            const NodeGroup& nodes) {
  return (o.algo == Algo::kAdaptive || o.algo == Algo::kAvg) && replicas.num_alive() == 1 &&
         !nodes.multi() && o.alpha == 1.0 && o.mu == 0.0 && o.beta >= 1.0 && o.ema == 0.0;
}

double merge_round(RoundContext& ctx, std::vector<double>* weights, MergeWeights kind, double alpha,
                   double beta, double mu) {
  const auto t0 = Clock::now();
  const int k = ctx.replicas.size();
  std::vector<index_t> n(static_cast<std::size_t>(k)), m(n.size());
  bool trained = false;
  for (int i = 0; i < k; ++i) {
    n[i] = ctx.replicas.scratch(i).stats.updates;
    m[i] = ctx.replicas.scratch(i).stats.samples;
    trained = trained || (ctx.replicas.alive(i) && n[i] > 0);
  }
  // Weights come from this round's counters only: p_i measures what replica i contributed
  // since the last merge, which is what the normalised average must weigh.
  *weights = merge_weights(kind, n, m, ctx.replicas.alive_mask());
  // Across nodes, local weights are scaled by the node's part of the job's total (of the same
  // counter), which normalises them over all nodes; one node alone keeps its share of 1.
  double local_total = 0.0;
  for (int i = 0; i < k; ++i) {
    if (!ctx.replicas.alive(i)) continue;
    local_total += kind == MergeWeights::kUpdates   ? static_cast<double>(n[i])
                   : kind == MergeWeights::kSamples ? static_cast<double>(m[i])
                                                    : 1.0;
  }
  const double share = ctx.nodes.merge_share(local_total, &trained);
  // Across nodes that reduction also waited for the slowest node's last batch: the round's
  // barrier tail, training time as on one node, not merge time.
  const auto t_merge = ctx.nodes.multi() ? Clock::now() : t0;
  if (!trained) return seconds_since(t_merge);  // replicas still equal the centre
  if (centre_follows_replica(ctx.options, ctx.replicas, ctx.nodes)) return seconds_since(t_merge);
  if (ctx.nodes.multi()) {
    for (double& x : *weights) x *= share;
  }
  std::vector<Device*> live;
  std::vector<double> w;
  for (int i = 0; i < k; ++i) {
    if (!ctx.replicas.alive(i)) continue;
    live.push_back(&ctx.replicas.device(i));
    w.push_back((*weights)[i]);
  }
  ctx.centre.merge(live, w, alpha, beta, mu);
  return seconds_since(t_merge);
}

std::vector<double> uniform_alive_weights(const ReplicaSet& replicas) {
  const double live = static_cast<double>(replicas.num_alive());
  std::vector<double> w(static_cast<std::size_t>(replicas.size()), 0.0);
  for (int i = 0; i < replicas.size(); ++i) w[i] = replicas.alive(i) ? 1.0 / live : 0.0;
  return w;
}

std::unique_ptr<Round> make_round(Algo algo) {
  switch (algo) {
    case Algo::kAdaptive:
      return make_adaptive_round();
    case Algo::kSync:
      return make_sync_round();
    case Algo::kAvg:
      return make_avg_round();
    case Algo::kEasgd:
      return make_easgd_round();
  }
  HETSGD_FAIL("unknown algorithm");
}

}  // namespace hetsgd
