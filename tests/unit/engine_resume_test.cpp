// Checkpoint and resume through the engine, on real CPU devices.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "core/cluster/cluster.h"
#include "core/communicator.h"
#include "core/engine/checkpoint.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "datasets/validation_split.h"
#include "tests/common/scratch_dir.h"
#include "tests/common/thrown.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "engine_resume_" + std::to_string(::getpid()) + "_" + name;
}

// One device, plain SGD, beta = 1: the state a checkpoint holds is the whole state, so a
// resumed run must follow the uninterrupted one exactly (the CPU device is deterministic). The
// run ends after `max_rounds` rounds.
TrainOptions resumable_options(int max_rounds) {
  TrainOptions o;
  o.lr0 = 0.5;
  o.b0 = 32;
  o.b_min = 16;
  o.batch_policy = BatchPolicy::kFixed;
  o.warmup_epochs = 1.0;  // the resume point lies inside the warm-up ramp
  o.round_samples = 400;  // rounds do not align with epochs: the cursor is mid-epoch
  o.max_epochs = 0.0;
  o.eval_every_rounds = 2;
  o.max_rounds = max_rounds;
  return o;
}

// The three runs of a resume test, each on fresh devices `ids` with options `o`: uninterrupted
// for 6 rounds (`full`), stopped after 3 with a checkpoint at `path` (`half`), and resumed from
// that file to round 6 (`resumed`).
struct ResumeRuns {
  TrainResult full, half, resumed;
};
ResumeRuns run_three(const test::EngineProblem& p, const std::vector<std::string>& ids,
                     TrainOptions o, const std::string& path) {
  auto comm = make_host_communicator();
  auto run = [&](int rounds, const std::string& checkpoint, const std::string& resume) {
    o.max_rounds = rounds;
    o.checkpoint_path = checkpoint;
    o.resume_path = resume;
    auto devices = test::cpu_devices(ids, p.config);
    return train(devices, *comm, p.train, p.test, o);
  };
  ResumeRuns r;
  r.full = run(6, "", "");
  r.half = run(3, path, "");
  r.resumed = run(6, "", path);
  return r;
}

TEST(EngineResume, ResumedRunEqualsTheUninterruptedRun) {
  test::EngineProblem p = test::small_problem(1000, 128, OptimizerKind::kSgd);
  const std::string path = temp_path("a.ckpt");
  const ResumeRuns runs = run_three(p, {"cpu:0"}, resumable_options(6), path);
  const TrainResult &want = runs.full, &half = runs.half, &got = runs.resumed;
  const TrainState c = load_checkpoint(path);  // the resumed run writes none
  EXPECT_EQ(c.round, 3);
  EXPECT_EQ(c.cursor.consumed, half.samples);
  EXPECT_EQ(c.centre, half.centre);
  EXPECT_EQ(c.cursor.epoch, 1);  // 3 rounds x ~400 points of 1000: in the second epoch

  EXPECT_TRUE(got.resumed);
  EXPECT_EQ(got.rounds_done, 6);
  EXPECT_EQ(got.rounds.size(), 3u);
  EXPECT_EQ(got.samples, want.samples);
  EXPECT_GE(got.train_seconds, c.train_seconds);
  ASSERT_EQ(got.centre.size(), want.centre.size());
  EXPECT_EQ(got.centre, want.centre);
  EXPECT_EQ(got.final_metrics.p_at(1), want.final_metrics.p_at(1));
  std::remove(path.c_str());
}

using test::read_file_bytes;

// The engine's checkpoints stream the centre, the optimiser states, the replicas and the
// best model from their owners instead of copying them into a TrainState first. The file
// must be the one the copied state gives: the last checkpoint of a run is taken from the same
// state that the run hands back. Two devices with a shortlisted Adam output layer (its state
// is lazily updated and streamed where it lives), keep-best in a file, and the
// algorithms that keep replicas apart from the centre (EASGD) and a previous centre (block
// momentum).
TEST(EngineResume, StreamedCheckpointEqualsTheSavedFinalState) {
  struct Case {
    const char* name;
    Algo algo;
    double mu;
  };
  for (const Case& c : {Case{"adaptive", Algo::kAdaptive, 0.0}, Case{"easgd", Algo::kEasgd, 0.0},
                        Case{"momentum", Algo::kAdaptive, 0.5}}) {
    SCOPED_TRACE(c.name);
    test::EngineProblem p = test::small_problem(1200, 128);
    p.config.output_layer = OutputLayer::kShortlist;
    p.config.shortlist.sampled_negatives = 8;
    p.config.shortlist.hard_negatives = 0;
    const auto [tr, val] = datasets::split_validation(p.train, 0.2, 3);
    const std::string ckpt = temp_path(std::string(c.name) + ".ckpt");
    const std::string copy = temp_path(std::string(c.name) + "_copy.ckpt");
    TrainOptions o = resumable_options(4);
    o.algo = c.algo;
    o.mu = c.mu;
    o.eval_every_rounds = 1;
    o.checkpoint_path = ckpt;
    o.best_model_file = temp_path(std::string(c.name) + ".best");
    auto devices = test::cpu_devices({"cpu:0", "cpu:1"}, p.config);
    auto comm = make_host_communicator();
    const TrainResult r = train(test::raw(devices), *comm, TrainData{&tr, &p.test, &val}, o);
    ASSERT_FALSE(r.state.slots.empty());
    EXPECT_FALSE(r.state.slots[0].optimizer.second.empty());
    EXPECT_FALSE(r.state.best_centre.empty());
    EXPECT_EQ(r.state.slots[0].replica.empty(), c.algo != Algo::kEasgd);
    EXPECT_EQ(r.state.previous_centre.empty(), c.mu == 0.0 && c.algo != Algo::kEasgd);
    save_checkpoint(copy, r.state);
    const std::string streamed = read_file_bytes(ckpt);
    ASSERT_GT(streamed.size(), 1000u);
    EXPECT_TRUE(streamed == read_file_bytes(copy)) << "the streamed checkpoint differs";
    EXPECT_EQ(load_checkpoint(ckpt).slots[1].optimizer.first, r.state.slots[1].optimizer.first);
    std::remove(ckpt.c_str());
    std::remove(copy.c_str());
  }
}

TEST(EngineResume, RefusesACheckpointOfOtherOptionsOrModel) {
  test::EngineProblem p = test::small_problem(500, 64, OptimizerKind::kSgd);
  auto comm = make_host_communicator();
  const std::string path = temp_path("b.ckpt");
  TrainOptions o = resumable_options(1);
  o.checkpoint_path = path;
  auto d = test::cpu_devices({"cpu:0"}, p.config);
  train(d, *comm, p.train, p.test, o);

  // The message with which a run of `opts` on a device of `config` refuses the checkpoint; a
  // test failure saying `resumed` when it trains instead.
  const auto refusal = [&](const ModelConfig& config, const TrainOptions& opts,
                           const char* resumed) -> std::string {
    auto dev = test::cpu_devices({"cpu:0"}, config);
    return test::thrown_message<InvalidArgument>([&] { train(dev, *comm, p.train, p.test, opts); },
                                                 resumed);
  };
  TrainOptions other = resumable_options(2);
  other.lr0 = 0.25;
  other.resume_path = path;
  const std::string lr = refusal(p.config, other, "resumed with another learning rate");
  EXPECT_NE(lr.find("lr0=0.25"), std::string::npos) << lr;

  ModelConfig wider = p.config;
  wider.hidden = {48};
  TrainOptions same = resumable_options(2);
  same.resume_path = path;
  auto d3 = test::cpu_devices({"cpu:0"}, wider);
  EXPECT_THROW(train(d3, *comm, p.train, p.test, same), InvalidArgument);

  // Two hidden layers whose parameter count equals the saved model's: the shape decides.
  const std::vector<index_t> w = p.config.widths();
  const index_t h = p.config.hidden[0];
  const index_t saved = (w.front() + 1) * h + (h + 1) * w.back();
  index_t found = 0;
  for (index_t a = 1; a < 4 * h && found == 0; ++a) {
    for (index_t b = 1; b < 4 * h && found == 0; ++b) {
      if ((w.front() + 1) * a + (a + 1) * b + (b + 1) * w.back() == saved) found = a * 100000 + b;
    }
  }
  if (found > 0) {
    ModelConfig deeper = p.config;
    deeper.hidden = {found / 100000, found % 100000};
    EXPECT_EQ(test::cpu_devices({"cpu:0"}, deeper)[0]->layout().total(), d[0]->layout().total());
    const std::string m =
        refusal(deeper, same, "resumed a model of another shape with the same parameter count");
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("layers"), std::string::npos) << m;
    EXPECT_NE(m.find(model_shape_text(p.config)), std::string::npos) << m;
    EXPECT_NE(m.find(model_shape_text(deeper)), std::string::npos) << m;
  }

  ModelConfig adam = p.config;
  adam.optimizer.kind = OptimizerKind::kAdam;
  const std::string m = refusal(adam, same, "resumed an SGD checkpoint with Adam");
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("--optimizer=sgd"), std::string::npos) << m;
  EXPECT_NE(m.find("--optimizer=adam"), std::string::npos) << m;
  std::remove(path.c_str());
}

// A checkpoint that cannot be written (here a directory stands where the file should go, as a
// full disk would fail the write) is reported and counted; the run goes on to its end and
// hands back its model.
TEST(EngineResume, AFailedCheckpointIsReportedAndTheRunGoesOn) {
  test::EngineProblem p = test::small_problem(500, 64, OptimizerKind::kSgd);
  auto comm = make_host_communicator();
  const std::string dir = temp_path("ckpt_dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  TrainOptions o = resumable_options(3);
  o.checkpoint_every_rounds = 1;
  o.checkpoint_path = dir;
  auto d = test::cpu_devices({"cpu:0"}, p.config);
  const TrainResult r = train(d, *comm, p.train, p.test, o);
  EXPECT_EQ(r.rounds_done, 3);
  EXPECT_EQ(r.checkpoint_failures, 4);  // every round's, and the final one
  EXPECT_EQ(static_cast<index_t>(r.model.size()), d[0]->layout().total());
  ::rmdir(dir.c_str());
}

// Two ranks faked on one process (the other rank mirrors this one) whose gather of the other
// rank's checkpoint slots is refused, as when rank 0 has no memory for them: every checkpoint
// is skipped, counted and reported, and training goes on to its end instead of failing.
class RefusingTwoRanks final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* name() const override { return "refusing"; }
  void allreduce_sum(float* d, index_t n) override { mirror(d, n); }
  void allreduce_sum(double* d, index_t n) override { mirror(d, n); }
  void allreduce_sum(std::int64_t* d, index_t n) override { mirror(d, n); }
  void allreduce_max(std::int64_t*, index_t) override {}
  void broadcast(void*, std::size_t, int) override {}
  std::vector<std::string> allgather(const std::string& mine) override { return {mine, mine}; }
  std::vector<std::string> gather_to_root(const std::string&) override {
    ++gathers;
    throw GatherRefused("gathering 2 ranks' bytes on rank 0 needs more than there is");
  }
  void barrier() override {}
  std::int64_t fetch_add(SharedCounter c, std::int64_t delta) override {
    return one_->fetch_add(c, delta);
  }
  int gathers = 0;

 private:
  template <typename T>
  static void mirror(T* d, index_t n) {
    for (index_t k = 0; k < n; ++k) d[k] *= 2;
  }
  std::unique_ptr<Cluster> one_ = make_single_cluster();
};

TEST(EngineResume, ARefusedGatherOfTheOtherRanksSlotsSkipsTheCheckpointAndTheRunGoesOn) {
  test::EngineProblem p = test::small_problem(500, 64, OptimizerKind::kSgd);
  auto comm = make_host_communicator();
  const std::string path = temp_path("refused.ckpt");
  std::remove(path.c_str());
  TrainOptions o = resumable_options(3);
  o.algo = Algo::kSync;  // one cursor per rank: a mirrored rank needs no shared one
  o.checkpoint_every_rounds = 1;
  o.checkpoint_path = path;
  RefusingTwoRanks cluster;
  TrainData data{&p.train, &p.test};
  data.cluster = &cluster;
  auto d = test::cpu_devices({"cpu:0"}, p.config);
  testing::internal::CaptureStderr();
  const TrainResult r = train(test::raw(d), *comm, data, o);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.rounds_done, 3);
  EXPECT_EQ(cluster.gathers, 4);  // every round's, and the final one
  EXPECT_EQ(r.checkpoint_failures, 4);
  EXPECT_EQ(r.checkpoint_chunks, 0);
  EXPECT_NE(err.find("checkpoint not written at round 3: rank 0 cannot hold the other ranks' "
                     "device slots: gathering 2 ranks' bytes"),
            std::string::npos)
      << err;
  EXPECT_FALSE(std::ifstream(path).good()) << "no checkpoint without the other rank's slots";
  EXPECT_EQ(static_cast<index_t>(r.model.size()), d[0]->layout().total());
}

// The default `proportional` policy sizes batches from measured throughput; in deterministic
// mode it keeps b0, so two runs on devices of different speeds train the same points and end
// bit-identical.
TEST(EngineResume, DeterministicRunsRepeatWithTheProportionalPolicy) {
  test::EngineProblem p = test::small_problem(1000, 128, OptimizerKind::kAdam);
  auto comm = make_host_communicator();
  auto run = [&] {
    TrainOptions o = resumable_options(5);
    o.lr0 = 0.01;
    o.deterministic = true;
    o.batch_policy = BatchPolicy::kProportional;
    o.warmup_epochs = 0.0;
    auto devices = test::cpu_devices({"cpu:0", "cpu:1@0.33"}, p.config);
    return train(devices, *comm, p.train, p.test, o);
  };
  const TrainResult a = run(), b = run();
  EXPECT_EQ(a.centre, b.centre);
  ASSERT_EQ(a.devices.size(), 2u);
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].batch_size, 32) << "device " << i;
    EXPECT_EQ(a.devices[i].updates, b.devices[i].updates) << "device " << i;
  }
}

// Two devices with Adam: the state now holds every replica's moments and step count, the
// batch sizes and the cursor, so in deterministic mode (batches handed out in slot order) a
// resumed run is the uninterrupted one bit for bit, through a file and in memory.
TEST(EngineResume, MultiDeviceAdamResumeIsBitIdenticalInDeterministicMode) {
  test::EngineProblem p = test::small_problem(1000, 128, OptimizerKind::kAdam);
  auto comm = make_host_communicator();
  const std::string path = temp_path("adam.ckpt");
  TrainOptions o = resumable_options(6);
  o.lr0 = 0.01;
  o.deterministic = true;
  o.batch_policy = BatchPolicy::kPaper;
  o.b_max = 64;
  o.warmup_epochs = 0.5;
  const std::vector<std::string> ids = {"cpu:0", "cpu:1"};
  const ResumeRuns runs = run_three(p, ids, o, path);
  const TrainResult &want = runs.full, &half = runs.half, &got = runs.resumed;
  ASSERT_EQ(half.state.slots.size(), 2u);
  EXPECT_GT(half.state.slots[0].optimizer.steps, 0);
  EXPECT_FALSE(half.state.slots[0].optimizer.second.empty());

  EXPECT_TRUE(got.resumed);
  EXPECT_EQ(got.samples, want.samples);
  EXPECT_EQ(got.centre, want.centre);
  ASSERT_EQ(got.devices.size(), want.devices.size());
  for (std::size_t i = 0; i < got.devices.size(); ++i) {
    EXPECT_EQ(got.devices[i].updates, want.devices[i].updates);
    EXPECT_EQ(got.devices[i].batch_size, want.devices[i].batch_size);
  }

  // The same continuation from the in-memory state, without a file.
  const TrainOptions& again = o;
  auto d_again = test::cpu_devices(ids, p.config);
  const TrainResult mem = train(test::raw(d_again), *comm, p.train, p.test, again, half.state);
  EXPECT_EQ(mem.centre, want.centre);

  // Without the optimiser state (moments restarted) the trajectory leaves the uninterrupted one:
  // the check above is not vacuous.
  TrainState no_moments = half.state;
  for (SlotState& slot : no_moments.slots) slot.optimizer = OptimizerState{};
  auto d_reset = test::cpu_devices(ids, p.config);
  for (auto& d : d_reset) {
    const OptimizerState zero = d->read_optimizer();
    for (SlotState& slot : no_moments.slots) slot.optimizer = zero;
  }
  const TrainResult reset = train(test::raw(d_reset), *comm, p.train, p.test, again, no_moments);
  EXPECT_NE(reset.centre, want.centre);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hetsgd
