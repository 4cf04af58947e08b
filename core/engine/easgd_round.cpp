// Synchronous EASGD (Zhang et al. 2015; core/engine/README.md §Baselines): every tau local steps of
// b0 points, one elastic exchange between the replicas and the centre. The replicas never restart
// from an average: each is its own b0-batch SGD, held near Z by the elastic force.
#include <chrono>
#include <vector>

#include "core/engine/round.h"

namespace hetsgd {
namespace {

class EasgdRound final : public Round {
 public:
  double run(RoundContext& ctx, std::vector<double>* weights) override {
    const TrainOptions& o = ctx.options;
    const index_t per_period = static_cast<index_t>(ctx.replicas.num_alive()) * o.b0 * o.easgd_tau;
    const index_t periods = std::max<index_t>(1, (ctx.round_samples + per_period - 1) / per_period);
    double merge_time = 0.0;
    for (index_t p = 0; p < periods && !ctx.out_of_budget(); ++p) {
      ctx.replicas.run_on_alive([&](int i) {
        int left = o.easgd_tau;
        const TakeFn take = [&left](index_t) { return left-- > 0; };
        while (local_step(ctx, i, o.b0, o.b0, take)) {
        }
      });
      const auto t0 = std::chrono::steady_clock::now();
      const std::vector<Device*> live = ctx.replicas.alive_devices();
      // The moving rate a = 0.9 / K by default keeps a K <= 0.9 < 1 (Zhang et al.: stable).
      const double a = o.easgd_rate > 0.0 ? o.easgd_rate : 0.9 / static_cast<double>(live.size());
      ctx.centre.easgd_exchange(live, a);
      merge_time += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    *weights = uniform_alive_weights(ctx.replicas);
    return merge_time;
  }
  bool replicas_hold_centre(const TrainOptions&) const override { return false; }
};

}  // namespace

std::unique_ptr<Round> make_easgd_round() { return std::make_unique<EasgdRound>(); }

}  // namespace hetsgd
