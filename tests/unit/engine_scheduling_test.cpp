// Adaptive SGD's scheduling on real CPU devices with emulated speeds: dynamic batches from the
// shared cursor, and batch-size policies that equalise update counts.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/communicator.h"
#include "core/engine/batch_policy.h"
#include "core/engine/evaluation.h"
#include "core/engine/trainer.h"
#include "datasets/validation_split.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

// One device averaging with itself: Z' = A = the replica at every merge, so rounds skip the
// merge and Z is read from the replica where it is used. The selected model must be the one
// its evaluation saw, and the final centre the replica itself.
TEST(EngineScheduling, OneDeviceSkipsItsMergesAndItsCentreIsItsReplica) {
  test::ValidatedRun v(1500, 256);
  Device& device = *v.devices[0];
  TrainOptions o = test::every_round_options();
  o.round_samples = 200;
  o.max_rounds = 8;
  const TrainResult r = v.run(o);
  EXPECT_EQ(r.rounds_done, 8);
  std::vector<float> replica(r.centre.size());
  device.read_params(replica.data());
  EXPECT_EQ(r.centre, replica);
  // The kept model is the one its validation evaluation measured.
  ASSERT_TRUE(r.has_val);
  device.write_params(r.model.data());
  const RankingMetrics again = evaluate(device, v.val, o.eval_topk, o.eval_batch);
  EXPECT_EQ(again.p_at(1), r.val_metrics.p_at(1));
  EXPECT_EQ(again.ndcg_at(5), r.val_metrics.ndcg_at(5));
}

// The dynamic scheduler's promise, made deterministic: a device that is busy holds back
// nothing, the free one takes the rest of the round from the shared cursor. The speed ratio
// is not left to the clock (a sleeping device's share follows the machine's load: the ratio
// under real timing is a benchmark, tools/bench_adaptive.sh): the slow device's step is held
// until the fast one has trained every other point of the round (RoundGate), so whatever the
// threads' timing it trains at most one batch a round and the fast one all the others.
TEST(EngineScheduling, AHeldDeviceTakesAtMostOneBatchARoundAndTheFreeOneTheRest) {
  TrainOptions o = test::quick_options();
  o.batch_policy = BatchPolicy::kFixed;
  const TrainResult r = test::train_gated_pair(o, 3);
  ASSERT_EQ(r.rounds.size(), 3u);
  for (const RoundRecord& rec : r.rounds) {
    ASSERT_EQ(rec.devices.size(), 2u);
    EXPECT_EQ(rec.devices[0].batch_size, 64);
    EXPECT_LE(rec.devices[1].updates, 1) << "round " << rec.round;
    // The free device trains every other batch: the round's quota less the held one's.
    EXPECT_GE(rec.devices[0].updates, 2048 / 64 - 1) << "round " << rec.round;
    // Every round hands out its quota (plus at most one batch per device), none skipped.
    const index_t pts = rec.devices[0].samples + rec.devices[1].samples;
    EXPECT_GE(pts, 2048);
    EXPECT_LE(pts, 2048 + 2 * 64);
  }
}

// `proportional` equalises update counts within three rounds. The rounds are simulated with
// the engine's own BatchSizer and a fixed cost model instead of measured on sleeping devices
// (a measurement under a loaded machine is a benchmark: tools/bench_adaptive.sh): devices of
// speeds 1 and 0.33 share one cursor, so each trains a share of the round's 4,096 points
// proportional to its speed, in batches of its current size, at 500 us per row on the fast
// one, plus a fixed 2 ms a step stretched by the slow one's emulation as the engine's is.
TEST(EngineScheduling, ProportionalPolicyEqualisesUpdateCountsWithinThreeRounds) {
  TrainOptions o = test::quick_options();
  o.batch_policy = BatchPolicy::kProportional;
  BatchSizer sizer(o, 2);
  const std::vector<double> speed = {1.0, 0.33};
  const std::vector<bool> all = {true, true};
  const double round = 4096.0, per_row = 500e-6, per_step = 2e-3;
  std::vector<index_t> updates(2), samples(2);
  bool equal_by_round3 = false;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> busy(2);
    for (size_t i = 0; i < 2; ++i) {
      const index_t b = sizer.sizes()[i];
      samples[i] = static_cast<index_t>(round * speed[i] / (speed[0] + speed[1]));
      updates[i] = (samples[i] + b - 1) / b;
      busy[i] =
          (static_cast<double>(samples[i]) * per_row + static_cast<double>(updates[i]) * per_step) /
          speed[i];
    }
    // Sizes are set after each round: round 2 and round 3 run with adapted sizes.
    if (k > 0) {
      const double n0 = static_cast<double>(updates[0]), n1 = static_cast<double>(updates[1]);
      equal_by_round3 = equal_by_round3 || std::abs(n0 - n1) <= 0.1 * std::max(n0, n1);
    }
    sizer.observe_round(updates, samples, busy, all, /*warmup=*/false);
  }
  EXPECT_TRUE(equal_by_round3);
  // The fast device got the bigger batch and the total stays K * b0.
  EXPECT_GT(sizer.sizes()[0], sizer.sizes()[1]);
  EXPECT_NEAR(static_cast<double>(sizer.sizes()[0] + sizer.sizes()[1]), 128.0, 2.0);
}

// Two ranks with one device each, as `mpirun` runs them (tests/mpi, tools/bench_mpi.sh): each
// rank has its own BatchSizer, and the job's totals reach both through the node sum, an
// all-reduce. Faked on one process: each rank's observe_round runs on its own thread, and the
// sum returns to both once both have contributed.
class TwoRankSum {
 public:
  NodeSum of(int rank) {
    return [this, rank](double* v, int n) { sum(rank, v, n); };
  }

 private:
  void sum(int rank, double* v, int n) {
    std::unique_lock<std::mutex> lock(mu_);
    in_[rank].assign(v, v + n);
    const int generation = generation_;
    if (++arrived_ == 2) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, std::chrono::seconds(60),
                             [&] { return generation_ != generation; })) {
      // Only reached when the other rank skips the collective (a broken sizer): fail, not hang.
      throw std::runtime_error("rank " + std::to_string(rank) + ": the other rank never summed");
    }
    for (int k = 0; k < n; ++k) v[k] = in_[0][k] + in_[1][k];
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<double> in_[2];
  int arrived_ = 0;
  int generation_ = 0;
};

// `proportional` across ranks: rank 0's device at speed 1, rank 1's at 0.33 (`cpu:0` and
// `cpu:0@0.33` under mpirun), on the previous test's cost model: both draw from the job's one
// cursor, so each trains a share of the round proportional to its speed. Each rank sees a
// single device, so without the node sum its policy keeps b0 (the total is K * b0 with K = 1)
// and update counts stay at the speed ratio; with it, b_i follows r_i over the job's summed
// rates, and the counts are equal from round 2 on.
TEST(EngineScheduling, ProportionalPolicyEqualisesUpdateCountsAcrossRanks) {
  TrainOptions o = test::quick_options();
  o.batch_policy = BatchPolicy::kProportional;
  o.b0 = 128;
  o.b_min = 32;
  o.b_max = 1024;
  const double speed[2] = {1.0, 0.33};
  const double round = 4096.0, per_row = 500e-6, per_step = 2e-3;
  struct Rounds {
    std::vector<std::array<index_t, 2>> updates;  // per round, per rank
    std::array<index_t, 2> sizes{};               // after the last round
  };
  auto simulate = [&](bool node_sum) {
    std::vector<BatchSizer> ranks(2, BatchSizer(o, 1));
    TwoRankSum reduce;
    if (node_sum) {
      for (int r = 0; r < 2; ++r) ranks[static_cast<size_t>(r)].set_node_sum(reduce.of(r));
    }
    Rounds out;
    for (int k = 0; k < 4; ++k) {
      std::array<index_t, 2> n{};
      std::vector<std::vector<index_t>> updates(2), samples(2);
      std::vector<std::vector<double>> busy(2);
      for (size_t r = 0; r < 2; ++r) {
        const index_t b = ranks[r].sizes()[0];
        const auto m = static_cast<index_t>(round * speed[r] / (speed[0] + speed[1]));
        n[r] = (m + b - 1) / b;
        updates[r] = {n[r]};
        samples[r] = {m};
        busy[r] = {(static_cast<double>(m) * per_row + static_cast<double>(n[r]) * per_step) /
                   speed[r]};
      }
      out.updates.push_back(n);
      auto observe = [&](size_t r) {
        ranks[r].observe_round(updates[r], samples[r], busy[r], {true}, /*warmup=*/false);
      };
      std::thread peer(observe, 1);  // the collective needs both ranks at once
      observe(0);
      peer.join();
    }
    out.sizes = {ranks[0].sizes()[0], ranks[1].sizes()[0]};
    return out;
  };
  auto ratio = [](const std::array<index_t, 2>& n) {
    return static_cast<double>(n[0]) / static_cast<double>(n[1]);
  };

  const Rounds job = simulate(true);
  EXPECT_GT(ratio(job.updates[0]), 2.5) << "round 1 runs at b0 on both ranks: the speed ratio";
  for (size_t k = 1; k < job.updates.size(); ++k) {
    const double n0 = static_cast<double>(job.updates[k][0]);
    const double n1 = static_cast<double>(job.updates[k][1]);
    EXPECT_LE(std::abs(n0 - n1), 0.1 * std::max(n0, n1))
        << "round " << k + 1 << ": " << n0 << " vs " << n1 << " updates";
  }
  // The slow rank's batch shrinks by the speed ratio, and the two ranks hold the job's 2 * b0.
  EXPECT_LT(job.sizes[1], o.b0);
  EXPECT_GT(job.sizes[0], 2 * job.sizes[1]);
  EXPECT_NEAR(static_cast<double>(job.sizes[0] + job.sizes[1]), 2.0 * 128, 2.0);

  const Rounds alone = simulate(false);
  EXPECT_EQ(alone.sizes[0], o.b0);
  EXPECT_EQ(alone.sizes[1], o.b0);
  EXPECT_GT(ratio(alone.updates.back()), 2.5) << "without the node sum counts stay unequal";
}

// `paper` at its defaults (S = 2048, b0 = 128, b_max = 1024, step 32) on a fast device and a
// held one (RoundGate: at most one batch a round, so its share of the updates is below 1/K
// whatever the timing): the walk must move, the fast device's batch up and the held one's
// down, towards equal update counts.
TEST(EngineScheduling, PaperPolicyWalkMovesAtItsDefaults) {
  TrainOptions o = test::quick_options();
  o.b0 = 128;
  o.b_max = 1024;
  o.batch_policy = BatchPolicy::kPaper;
  const TrainResult r = test::train_gated_pair(o, 4);
  ASSERT_EQ(r.rounds.size(), 4u);
  // Three walks of 32 by the last round, four after it.
  EXPECT_EQ(r.rounds.back().devices[0].batch_size, 128 + 3 * 32);
  EXPECT_EQ(r.devices[0].batch_size, 128 + 4 * 32) << "fast device's batch did not grow";
  EXPECT_LT(r.devices[1].batch_size, 128) << "held device's batch did not shrink";
  // The walk closes the gap in update counts: the last round is more even than the first.
  auto gap = [](const RoundRecord& rec) {
    return std::abs(static_cast<double>(rec.devices[0].updates - rec.devices[1].updates));
  };
  EXPECT_LT(gap(r.rounds.back()), gap(r.rounds.front()));
}

TEST(EngineScheduling, AdaptiveTrainingLearnsAndReportsCurve) {
  test::EngineProblem p = test::small_problem(2048, 512);
  auto devices = test::cpu_devices({"cpu:0", "cpu:1@0.5"}, p.config);
  auto comm = make_host_communicator();
  TrainOptions o = test::quick_options();
  o.max_epochs = 6.0;
  o.eval_every_rounds = 4;
  o.eval_at_start = true;
  int evals = 0, rounds = 0;
  TrainCallbacks cb;
  cb.on_eval = [&](const EvalRecord&) { ++evals; };
  cb.on_round = [&](const RoundRecord&) { ++rounds; };
  const TrainResult r = train(devices, *comm, p.train, p.test, o, cb);
  ASSERT_GE(r.evals.size(), 3u);
  EXPECT_EQ(evals, static_cast<int>(r.evals.size()));
  EXPECT_EQ(rounds, static_cast<int>(r.rounds.size()));
  EXPECT_EQ(r.stop, StopReason::kMaxEpochs);
  EXPECT_GE(r.epochs, 6.0);
  EXPECT_EQ(r.evals.front().time_s, 0.0);
  for (size_t i = 1; i < r.evals.size(); ++i) {
    EXPECT_GE(r.evals[i].time_s, r.evals[i - 1].time_s);
    EXPECT_GT(r.evals[i].samples, r.evals[i - 1].samples);
  }
  const double p1_start = r.evals.front().metrics.p_at(1);
  const double p1_end = r.final_metrics.p_at(1);
  std::printf("P@1 %.3f -> %.3f in %.2f s training (+%.2f s eval), %.0f samples/s\n", p1_start,
              p1_end, r.train_seconds, r.eval_seconds, r.samples_per_second());
  EXPECT_GT(p1_end, p1_start + 0.2);
  EXPECT_GT(r.train_seconds, 0.0);
  EXPECT_GT(r.eval_seconds, 0.0);
  EXPECT_EQ(r.centre.size(), static_cast<size_t>(devices[0]->layout().total()));
}

// TrainOptions::merge_budget: with auto S, a round whose merge took more than the budget's
// share doubles S from the third round on, up to N / 4; a fixed S, a zero budget, a
// deterministic run and a single device (nothing to merge) keep S as it is.
TEST(EngineScheduling, RoundsGrowWhileMergesTakeMoreThanTheirBudget) {
  test::EngineProblem p = test::small_problem(8192, 256);
  auto per_round = [&](double budget, bool deterministic, index_t fixed, int num_devices = 2) {
    std::vector<std::string> ids{"cpu:0", "cpu:1"};
    ids.resize(static_cast<std::size_t>(num_devices));
    auto devices = test::cpu_devices(ids, p.config);
    auto comm = make_host_communicator();
    TrainOptions o = test::quick_options();
    o.batch_policy = BatchPolicy::kFixed;
    o.round_samples = fixed;
    o.merge_budget = budget;
    o.deterministic = deterministic;
    o.max_rounds = 6;
    std::vector<index_t> points;
    index_t before = 0;
    TrainCallbacks cb;
    cb.on_round = [&](const RoundRecord& rec) {
      points.push_back(rec.samples - before);
      before = rec.samples;
    };
    const TrainResult r = train(devices, *comm, p.train, p.test, o, cb);
    EXPECT_EQ(r.round_samples, fixed > 0 ? fixed : points.back()) << "budget " << budget;
    return points;
  };
  // Auto S here is 8 * K * b0 = 1024 (N / 16 = 512); any merge exceeds a budget of 1e-12.
  const std::vector<index_t> grown = per_round(1e-12, false, 0);
  ASSERT_EQ(grown.size(), 6u);
  const std::vector<index_t> expect{1024, 1024, 2048, 2048, 2048, 2048};
  for (std::size_t i = 0; i < grown.size(); ++i) {
    // Devices pull whole batches: a round may hand out up to one batch per device more.
    EXPECT_GE(grown[i], expect[i]) << "round " << i + 1;
    EXPECT_LE(grown[i], expect[i] + 2 * 64) << "round " << i + 1;
  }
  for (const auto& fixed : {per_round(0.0, false, 0), per_round(1e-12, true, 0)}) {
    for (index_t pts : fixed) EXPECT_LE(pts, 1024 + 2 * 64);
  }
  for (index_t pts : per_round(1e-12, false, 512)) EXPECT_LE(pts, 512 + 2 * 64);
  // One device: auto S is 8 * b0 = 512 and stays there whatever the merge took.
  const std::vector<index_t> single = per_round(1e-12, false, 0, 1);
  ASSERT_EQ(single.size(), 6u);
  for (index_t pts : single) EXPECT_LE(pts, 512 + 64);
}

}  // namespace
}  // namespace hetsgd
