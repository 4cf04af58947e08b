// Synchronous SGD, PyTorch DDP-style: each step takes a global batch B = K b0 from the cursor,
// splits it into K equal shares, every device computes the gradient of its share scaled by
// share / B, the Communicator sums them, and every replica applies the same update. One such
// step is single-device SGD on B points, and every step waits for the slowest device.
#include <chrono>
#include <vector>

#include "core/engine/lr_schedule.h"
#include "core/engine/round.h"

namespace hetsgd {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class SyncRound final : public Round {
 public:
  double run(RoundContext& ctx, std::vector<double>* weights) override {
    const TrainOptions& o = ctx.options;
    ReplicaSet& reps = ctx.replicas;
    const int k = reps.size();
    double merge_time = 0.0;
    index_t done = 0;
    std::vector<index_t> global;
    // Every node must take the same number of steps: one out of budget stops them all.
    while (done < ctx.round_samples && !ctx.nodes.any(ctx.out_of_budget())) {
      std::vector<int> position(static_cast<std::size_t>(k), -1);
      int live = 0;
      for (int i = 0; i < k; ++i) {
        if (reps.alive(i)) position[i] = live++;
      }
      // Every node holds the same cursor and draws the same global batch; its devices take
      // the shares after those of the nodes below it.
      const NodeSpan span = ctx.nodes.span(live);
      const index_t share = o.b0;
      const index_t total = share * span.total;
      const index_t seen = ctx.source.next(total, &global);
      const double lr = learning_rate(o, ctx.scaling, total, seen, ctx.num_points, ctx.decay_unit);
      reps.run_on_alive([&](int i) {
        SlotScratch& s = reps.scratch(i);
        const auto t0 = Clock::now();
        gather_rows(ctx.train, global.data() + (span.offset + position[i]) * share, share,
                    &s.batch);
        // Scaled by share / B so that the all-reduced sum is the gradient of the B-point mean.
        const float loss = reps.device(i).gradient(
            s.batch, static_cast<float>(static_cast<double>(share) / static_cast<double>(total)));
        s.stats.busy_s += seconds_since(t0);
        s.loss_sum += static_cast<double>(loss) * static_cast<double>(share);
      });
      if (ctx.nodes.any(reps.num_alive() < live)) {
        // A share is missing: the step is void; its points go back and the next step splits
        // the global batch over the survivors.
        ctx.source.requeue(global);
        continue;
      }
      const auto t0 = Clock::now();
      const std::vector<Device*> devices = reps.alive_devices();
      ctx.comm.allreduce_gradients(devices, std::vector<double>(devices.size(), 1.0));
      merge_time += seconds_since(t0);
      reps.run_on_alive([&](int i) {
        const auto t1 = Clock::now();
        reps.device(i).apply_update(static_cast<float>(lr));
        SlotScratch& s = reps.scratch(i);
        s.stats.busy_s += seconds_since(t1);
        s.stats.updates += 1;
        s.stats.samples += share;
        s.stats.batch_size = share;
        s.stats.lr = lr;
      });
      done += total;
    }
    *weights = uniform_alive_weights(reps);
    return merge_time;
  }
  bool replicas_hold_centre(const TrainOptions&) const override { return true; }
  bool centre_is_replica() const override { return true; }
};

}  // namespace

std::unique_ptr<Round> make_sync_round() { return std::make_unique<SyncRound>(); }

}  // namespace hetsgd
