// Static model averaging, the paper's "GD" baseline: every device trains an equal share S / K
// of the round in batches of b0, whatever its speed, then a uniform average restarts them all.
#include <vector>

#include "core/engine/round.h"

namespace hetsgd {
namespace {

class AvgRound final : public Round {
 public:
  double run(RoundContext& ctx, std::vector<double>* weights) override {
    const TrainOptions& o = ctx.options;
    // Equal shares over every node's devices.
    const index_t live = ctx.nodes.sum(static_cast<index_t>(ctx.replicas.num_alive()));
    const index_t per_device = (ctx.round_samples + live - 1) / live;
    const index_t batches = std::max<index_t>(1, (per_device + o.b0 - 1) / o.b0);
    const index_t lr_batch = o.lr_batch == LrBatch::kRound ? live * o.b0 : o.b0;
    ctx.replicas.run_on_alive([&](int i) {
      index_t left = batches;
      const TakeFn take = [&left](index_t) { return left-- > 0; };
      while (local_step(ctx, i, o.b0, lr_batch, take)) {
      }
    });
    // Uniform weights, and every replica restarts from the plain average.
    return merge_round(ctx, weights, MergeWeights::kUniform, 1.0, 1.0, 0.0);
  }
  bool replicas_hold_centre(const TrainOptions&) const override { return true; }
};

}  // namespace

std::unique_ptr<Round> make_avg_round() { return std::make_unique<AvgRound>(); }

}  // namespace hetsgd
