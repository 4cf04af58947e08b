// Adaptive SGD's round (core/engine/README.md §Adaptive SGD): devices pull batches of their own
// size b_i from the shared cursor until the round's quota S is handed out, so a device twice as
// fast trains about twice the points; then a normalised merge and the batch policy's resize (run
// loop).
#include <vector>

#include "core/engine/round.h"

namespace hetsgd {
namespace {

class AdaptiveRound final : public Round {
 public:
  double run(RoundContext& ctx, std::vector<double>* weights) override {
    const TrainOptions& o = ctx.options;
    // The batch sizes of this round: the warm-up size, then the policy's (BatchSizer).
    const std::vector<index_t> sizes = ctx.sizer.sizes();
    index_t global = 0;
    for (int i = 0; i < ctx.replicas.size(); ++i) global += ctx.replicas.alive(i) ? sizes[i] : 0;
    global = ctx.nodes.sum(global);  // the round's global batch spans every node
    auto lr_batch = [&](int i) { return o.lr_batch == LrBatch::kRound ? global : sizes[i]; };
    if (o.deterministic) {
      run_planned(ctx, sizes, lr_batch);
    } else {
      run_dynamic(ctx, sizes, lr_batch);
    }
    return merge_round(ctx, weights, o.merge_weights, o.alpha, o.beta, o.mu);
  }

  index_t batch_of(const TrainOptions&, const BatchSizer& sizer, int slot) const override {
    return sizer.sizes()[slot];
  }
  bool replicas_hold_centre(const TrainOptions& o) const override { return o.beta >= 1.0; }

 private:
  // The paper's schedule: whoever is free takes the next batch. The quota is counted in
  // points handed out, so the last batches of a round may overshoot S by at most one batch
  // per device (the barrier tail).
  template <class LrBatchOf>
  static void run_dynamic(RoundContext& ctx, const std::vector<index_t>& sizes,
                          const LrBatchOf& lr_batch) {
    // The quota is the cursor's, counted over every node (one shared counter), so across
    // servers too the faster node takes more of the round.
    ctx.source.begin_round(ctx.round_samples);
    const TakeFn take = [](index_t) { return true; };
    ctx.replicas.run_on_alive([&](int i) {
      while (local_step(ctx, i, sizes[i], lr_batch(i), take)) {
      }
    });
  }

  // Deterministic mode: the scheduler hands the round's batches out in slot order, b_i at a
  // time, before any device starts, so which points each replica trains no longer depends on
  // timing. Devices then work through their lists concurrently. Used for reproducible runs
  // and exact resume tests; the proportional policy still reads measured throughputs.
  template <class LrBatchOf>
  static void run_planned(RoundContext& ctx, const std::vector<index_t>& sizes,
                          const LrBatchOf& lr_batch) {
    struct Planned {
      std::vector<index_t> rows;
      index_t seen = 0;
    };
    const int k = ctx.replicas.size();
    std::vector<std::vector<Planned>> plan(static_cast<std::size_t>(k));
    index_t assigned = 0;
    while (assigned < ctx.round_samples && !ctx.out_of_budget()) {
      for (int i = 0; i < k && assigned < ctx.round_samples; ++i) {
        if (!ctx.replicas.alive(i)) continue;
        Planned p;
        p.seen = ctx.source.next(sizes[i], &p.rows);
        assigned += sizes[i];
        plan[i].push_back(std::move(p));
      }
    }
    ctx.replicas.run_on_alive([&](int i) {
      std::size_t done = 0;
      try {
        for (; done < plan[i].size(); ++done) {
          train_batch(ctx, i, plan[i][done].rows, plan[i][done].seen, lr_batch(i));
        }
      } catch (...) {
        // The failed batch and every batch this slot had not reached go back to the cursor.
        for (std::size_t j = done; j < plan[i].size(); ++j) ctx.source.requeue(plan[i][j].rows);
        throw;
      }
    });
  }
};

}  // namespace

std::unique_ptr<Round> make_adaptive_round() { return std::make_unique<AdaptiveRound>(); }

}  // namespace hetsgd
