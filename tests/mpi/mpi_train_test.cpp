// `mpirun hetsgd train` across ranks on this machine (label mpi): sync over ranks is sync over
// devices, adaptive batches come from one cursor and are sized on the job's rates, a checkpoint
// resumes on another rank count, and a lost rank ends the job with the last checkpoint intact.
// Every rank is one node with one CPU device and one thread, so two or three ranks fit the two
// cores of CI (three oversubscribe them: --oversubscribe). Nothing here asserts on speeds: what
// timing decides is measured by tools/bench_mpi.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>

#include "core/engine/checkpoint.h"
#include "core/model/model_io.h"
#include "tests/common/cli_run.h"

namespace {

namespace fs = std::filesystem;

using hetsgd::test::CliRun;
using hetsgd::test::run_cli;

// Binding is off: ctest runs other tests next to these, and ranks pinned to a busy core would
// measure the neighbour, not their own speed.
std::string mpirun(int ranks) {
  return std::string(HETSGD_MPIEXEC) + " --oversubscribe --bind-to none -np " +
         std::to_string(ranks);
}

// The JSON record rank 0 printed (the last line that parses as an object).
nlohmann::json last_record(const CliRun& r) {
  std::istringstream in(r.out);
  std::string line;
  nlohmann::json j;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  }
  return j;
}

class MpiTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hetsgd_mpi_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// Small delicious-shaped data: seconds per run, and a model big enough to diverge if a merge
// or a share were wrong.
// No label forest: it grows on rank 0 after training, while the other ranks wait in MPI,
// and is tested on one process (tests/e2e/forest_test.cpp).
const std::string kFlags = "--synthetic=delicious --threads=1 -q --json --forest=off";
const std::string kData = kFlags + " --scale=0.1";

// Dropout is off: its masks are keyed by the device ordinal, and both ranks' devices are
// cpu:0 where the single process has cpu:0 and cpu:1, so the two runs would draw other masks.
TEST_F(MpiTrain, SyncOnTwoRanksEqualsSyncOnTwoDevices) {
  const std::string common = "train " + kData +
                             " --algo=sync --epochs=2 --no-keep-best --no-eval-at-start"
                             " --lr=0.002 --dropout=0 ";
  const CliRun one = run_cli(common + "--devices=cpu:0,cpu:1 -o " + path("one.model"));
  ASSERT_EQ(one.code, 0) << one.out;
  const CliRun two = run_cli(common + "--devices=cpu:0 -o " + path("two.model"), mpirun(2));
  ASSERT_EQ(two.code, 0) << two.out;
  const nlohmann::json j = last_record(two);
  ASSERT_TRUE(j.is_object()) << two.out;
  EXPECT_EQ(j["ranks"], 2);
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][1]["rank"], 1);
  EXPECT_EQ(j["samples"], last_record(one)["samples"]);

  const hetsgd::SavedModel a = hetsgd::load_model(path("one.model"));
  const hetsgd::SavedModel b = hetsgd::load_model(path("two.model"));
  ASSERT_EQ(a.params.size(), b.params.size());
  // One identical step per global batch on both sides: the only difference allowed is the
  // order of the float sums of the two shares' gradients.
  constexpr float kTol = 1e-5f;
  float worst = 0.0f, moved = 0.0f;
  for (std::size_t k = 0; k < a.params.size(); ++k) {
    worst = std::max(worst, std::abs(a.params[k] - b.params[k]));
    moved = std::max(moved, std::abs(a.params[k]));
  }
  EXPECT_LE(worst, kTol * std::max(1.0f, moved)) << "largest parameter " << moved;
}

// The ranks' devices as the record reports them, after checks that hold whatever the timing:
// two ranks, one device each, rank 1's emulated, both trained, and the devices' points add up
// to the job's.
std::pair<nlohmann::json, nlohmann::json> fast_and_slow(const CliRun& r) {
  const nlohmann::json j = last_record(r);
  EXPECT_TRUE(j.is_object()) << r.out;
  if (!j.is_object() || j["devices"].size() != 2u) {
    ADD_FAILURE() << "expected a record with two devices: " << r.out;
    return {};
  }
  EXPECT_EQ(j["ranks"], 2);
  EXPECT_EQ(j["devices"][1]["rank"], 1);
  EXPECT_EQ(j["devices"][1]["id"], "cpu:0@0.33");
  hetsgd::index_t trained = 0;
  for (const nlohmann::json& d : j["devices"]) {
    EXPECT_GT(d["updates"].get<hetsgd::index_t>(), 0) << d;
    trained += d["samples"].get<hetsgd::index_t>();
  }
  EXPECT_EQ(trained, j["samples"].get<hetsgd::index_t>());
  return {j["devices"][0], j["devices"][1]};
}

// MPMD: the same `train` arguments `args` on two ranks, rank 1's device emulated at a third of
// the speed.
CliRun run_fast_and_slow_ranks(const std::string& args) {
  return run_cli(
      args + " --devices=cpu:0 : -np 1 " + HETSGD_CLI + " " + args + " --devices=cpu:0@0.33",
      mpirun(1));
}

// Both ranks draw adaptive batches of the fixed size from the job's one cursor. How many each
// takes follows the speeds, which a loaded machine changes: tools/bench_mpi.sh measures the
// ratio; the claims on the shared cursor are tested on one process (engine_node_group_test).
TEST_F(MpiTrain, FixedBatchesOnTwoRanksShareOneCursor) {
  const std::string args = "train " + kData +
                           " --epochs=1 --batch-policy=fixed --batch=32 --round-samples=1024"
                           " --no-eval-at-start --eval-every=100";
  const CliRun r = run_fast_and_slow_ranks(args);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto [fast, slow] = fast_and_slow(r);
  for (const nlohmann::json& d : {fast, slow}) {
    EXPECT_EQ(d["batch_size"], 32);
    // A batch holds at most 32 points (fewer at the end of an epoch or of a round).
    EXPECT_LE(d["samples"].get<hetsgd::index_t>(), 32 * d["updates"].get<hetsgd::index_t>()) << d;
  }
}

TEST_F(MpiTrain, TimeBudgetEndsEveryRankTogether) {
  // Sync steps are collective: if the ranks' clocks disagreed about the budget, one rank would
  // end every round at once while the other still waited for the budget, and the run would end
  // in a string of empty rounds. Rank 0's clock is the run's, so only the last two may be short.
  const std::string args = "train " + kData +
                           " --algo=sync --time-budget=1.5 --epochs=0 --round-samples=1024"
                           " --batch=64 --no-eval-at-start";
  const CliRun r =
      run_cli(args + " --devices=cpu:0 : -np 1 " + HETSGD_CLI + " " + args + " --devices=cpu:0@0.5",
              mpirun(1));
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = last_record(r);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["stop"], "time budget");
  const auto rounds = j["rounds"].get<hetsgd::index_t>();
  EXPECT_GE(j["samples"].get<hetsgd::index_t>(), (rounds - 2) * 1024) << rounds << " rounds";
}

TEST_F(MpiTrain, ResumesOnAnotherRankCount) {
  const std::string common = "train " + kData + " --checkpoint=" + path("run.ckpt") + " ";
  const CliRun first = run_cli(common + "--max-rounds=2", mpirun(2));
  ASSERT_EQ(first.code, 0) << first.out;
  const nlohmann::json a = last_record(first);
  const hetsgd::TrainState saved = hetsgd::load_checkpoint(path("run.ckpt"));
  EXPECT_EQ(saved.round, 2);
  EXPECT_EQ(saved.cursor.consumed, a["samples"].get<hetsgd::index_t>());

  const CliRun three = run_cli(common + "--max-rounds=4 --resume=" + path("run.ckpt"), mpirun(3));
  ASSERT_EQ(three.code, 0) << three.out;
  const nlohmann::json b = last_record(three);
  ASSERT_TRUE(b.is_object()) << three.out;
  EXPECT_EQ(b["ranks"], 3);
  EXPECT_TRUE(b["resumed"].get<bool>());
  EXPECT_EQ(b["rounds"], 4);
  EXPECT_GT(b["samples"].get<double>(), a["samples"].get<double>());
  EXPECT_GT(b["p1"].get<double>(), 0.0);

  // And back to one process, without mpirun.
  const CliRun single = run_cli(common + "--max-rounds=5 --resume=" + path("run.ckpt"));
  ASSERT_EQ(single.code, 0) << single.out;
  const nlohmann::json c = last_record(single);
  EXPECT_EQ(c["ranks"], 1);
  EXPECT_EQ(c["rounds"], 5);
  EXPECT_GT(c["samples"].get<double>(), b["samples"].get<double>());
}

// Every rank resumes its own devices: rank 0's cpu:1 fails at its second step; rank 1's devices
// carry the same ids and stay healthy. The checkpoint holds all four slots by rank, and after a
// resume rank 1's devices are alive with their own totals (no rank adopts another's slots, so the
// devices' samples add up to the points the job trained).
TEST_F(MpiTrain, ResumeRestoresEveryRanksOwnSlots) {
  const std::string common = "train " + kData + " --checkpoint=" + path("run.ckpt") +
                             " --devices=cpu:0,cpu:1 --no-eval-at-start --eval-every=100";
  auto job = [&](const std::string& more) {
    return run_cli(
        common + more + " --inject-fault=1:after=1 : -np 1 " + HETSGD_CLI + " " + common + more,
        mpirun(1));
  };
  const CliRun first = job(" --max-rounds=2");
  ASSERT_EQ(first.code, 0) << first.out;
  const hetsgd::TrainState saved = hetsgd::load_checkpoint(path("run.ckpt"));
  ASSERT_EQ(saved.slots.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(saved.slots[i].rank, i < 2 ? 0 : 1);
  EXPECT_FALSE(saved.slots[1].alive);
  EXPECT_TRUE(saved.slots[2].alive);
  EXPECT_TRUE(saved.slots[3].alive);
  EXPECT_FALSE(saved.slots[3].optimizer.first.empty()) << "rank 1's Adam moments are saved";

  const CliRun again = job(" --max-rounds=4 --resume=" + path("run.ckpt"));
  ASSERT_EQ(again.code, 0) << again.out;
  const nlohmann::json j = last_record(again);
  ASSERT_TRUE(j.is_object()) << again.out;
  ASSERT_EQ(j["devices"].size(), 4u);
  EXPECT_FALSE(j["devices"][1]["alive"].get<bool>());
  EXPECT_TRUE(j["devices"][2]["alive"].get<bool>());
  EXPECT_TRUE(j["devices"][3]["alive"].get<bool>());
  EXPECT_GE(j["devices"][3]["samples"].get<hetsgd::index_t>(), saved.slots[3].samples);
  hetsgd::index_t trained = 0;
  for (const nlohmann::json& d : j["devices"]) trained += d["samples"].get<hetsgd::index_t>();
  EXPECT_EQ(trained, j["samples"].get<hetsgd::index_t>());
}

// The resume tests' run: sync over two ranks (dropout off, as above), `rounds` rounds of 1,024
// points, then `flags`.
std::string sync_rounds(int rounds, const std::string& flags) {
  return "train " + kData +
         " --algo=sync --no-keep-best --no-eval-at-start --eval-every=100 --dropout=0"
         " --devices=cpu:0 --round-samples=1024 --max-rounds=" +
         std::to_string(rounds) + " " + flags;
}

// The models saved at `full` and `resumed` hold the same parameters, bit for bit.
void expect_same_params(const std::string& full, const std::string& resumed) {
  const hetsgd::SavedModel a = hetsgd::load_model(full);
  const hetsgd::SavedModel b = hetsgd::load_model(resumed);
  ASSERT_EQ(a.params.size(), b.params.size());
  EXPECT_TRUE(a.params == b.params) << "the resumed run left the uninterrupted trajectory";
}

// Sync over two ranks with Adam does not depend on timing: a run checkpointed after two
// rounds and resumed for two more ends bit-identical to four uninterrupted rounds.
TEST_F(MpiTrain, TwoRankSyncResumeIsBitIdentical) {
  const CliRun full = run_cli(sync_rounds(4, "-o " + path("full.model")), mpirun(2));
  ASSERT_EQ(full.code, 0) << full.out;
  const CliRun half = run_cli(sync_rounds(2, "--checkpoint=" + path("run.ckpt")), mpirun(2));
  ASSERT_EQ(half.code, 0) << half.out;
  const CliRun rest = run_cli(
      sync_rounds(4, "--resume=" + path("run.ckpt") + " -o " + path("resumed.model")), mpirun(2));
  ASSERT_EQ(rest.code, 0) << rest.out;
  expect_same_params(path("full.model"), path("resumed.model"));
}

// Rank 1's slots reach rank 0 in chunks of at most HETSGD_GATHER_CHUNK bytes: at 4 KiB its
// Adam moments and replica (about 6 MB) take some 1,500 messages. The checkpoint must hold
// them intact and a resume must restore them on rank 1: a two-rank sync run resumed from it
// ends bit-identical to the uninterrupted one (rank 1 steps with its own moments, and its
// gradients enter the sum), and the devices' samples add up to the job's.
TEST_F(MpiTrain, CheckpointGathersInChunks) {
  const std::string chunked = mpirun(2) + " -x HETSGD_GATHER_CHUNK=4K";
  const CliRun full = run_cli(sync_rounds(4, "-o " + path("full.model")), mpirun(2));
  ASSERT_EQ(full.code, 0) << full.out;
  const CliRun half = run_cli(sync_rounds(2, "--checkpoint=" + path("run.ckpt")), chunked);
  ASSERT_EQ(half.code, 0) << half.out;
  const nlohmann::json a = last_record(half);
  ASSERT_TRUE(a.is_object()) << half.out;
  const hetsgd::TrainState saved = hetsgd::load_checkpoint(path("run.ckpt"));
  ASSERT_EQ(saved.slots.size(), 2u);
  EXPECT_EQ(saved.slots[1].rank, 1);
  EXPECT_FALSE(saved.slots[1].optimizer.first.empty()) << "rank 1's Adam moments are saved";
  // One checkpoint (at the end): rank 1's encoded slots in 4 KiB chunks.
  const std::size_t bytes = hetsgd::encode_slots({saved.slots[1]}).size();
  EXPECT_GT(bytes, 2u * 4096);
  EXPECT_EQ(a["checkpoint_chunks"].get<std::size_t>(), (bytes + 4095) / 4096) << bytes << " bytes";

  const CliRun rest = run_cli(
      sync_rounds(4, "--resume=" + path("run.ckpt") + " -o " + path("resumed.model")), chunked);
  ASSERT_EQ(rest.code, 0) << rest.out;
  const nlohmann::json b = last_record(rest);
  ASSERT_TRUE(b.is_object()) << rest.out;
  ASSERT_EQ(b["devices"].size(), 2u);
  EXPECT_GT(b["devices"][1]["samples"].get<hetsgd::index_t>(), saved.slots[1].samples);
  hetsgd::index_t trained = 0;
  for (const nlohmann::json& d : b["devices"]) trained += d["samples"].get<hetsgd::index_t>();
  EXPECT_EQ(trained, b["samples"].get<hetsgd::index_t>());
  expect_same_params(path("full.model"), path("resumed.model"));
}

// `proportional` adapts on both ranks' devices: each rank sizes its own device against the
// job's summed throughput (one reduction per round), b_i = round(2 * b0 * r_i / (r_0 + r_1)).
// The rates are measured, but the record holds the ones the last sizes were computed from, so
// the relation is exact whatever the timing; a rank that saw only its own device would keep
// b0. That the counts then equalise is tested on a cost model (EngineScheduling,
// ProportionalPolicyEqualisesUpdateCountsAcrossRanks) and measured by tools/bench_mpi.sh.
TEST_F(MpiTrain, ProportionalSizesEachRankAgainstTheJobsRates) {
  const std::string args = "train " + kData +
                           " --epochs=0 --max-rounds=2 --batch-policy=proportional --batch=128"
                           " --warmup-epochs=0 --round-samples=2048 --no-eval-at-start"
                           " --eval-every=100";
  const CliRun r = run_fast_and_slow_ranks(args);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto [fast, slow] = fast_and_slow(r);
  const double r0 = fast["throughput"].get<double>(), r1 = slow["throughput"].get<double>();
  ASSERT_GT(r0, 0.0) << r.out;
  ASSERT_GT(r1, 0.0) << r.out;
  auto expected = [&](double rate) {
    return std::clamp<hetsgd::index_t>(std::llround(2.0 * 128 * rate / (r0 + r1)), 32, 1024);
  };
  EXPECT_EQ(fast["batch_size"].get<hetsgd::index_t>(), expected(r0)) << r0 << " vs " << r1;
  EXPECT_EQ(slow["batch_size"].get<hetsgd::index_t>(), expected(r1)) << r0 << " vs " << r1;
}

TEST_F(MpiTrain, LostRankEndsTheJobAndKeepsTheCheckpoint) {
  // Rank 1's only device fails after 30 steps: rank 1 is lost, the job ends with its message,
  // and the checkpoint written every round still loads and resumes.
  const std::string args = "train " + kData +
                           " --epochs=20 --checkpoint-every=1 --checkpoint=" + path("run.ckpt") +
                           " --devices=cpu:0";
  const CliRun r = run_cli(
      args + " : -np 1 " + HETSGD_CLI + " " + args + " --inject-fault=0:after=30", mpirun(1));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rank 1 of 2"), std::string::npos) << r.out;
  const hetsgd::TrainState saved = hetsgd::load_checkpoint(path("run.ckpt"));
  EXPECT_GE(saved.round, 1);
  const CliRun again =
      run_cli("train " + kData + " --max-rounds=" + std::to_string(saved.round + 1) +
              " --resume=" + path("run.ckpt"));
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_TRUE(last_record(again)["resumed"].get<bool>());
}

}  // namespace
