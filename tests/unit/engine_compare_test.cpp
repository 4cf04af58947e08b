// compare(): every algorithm on fresh real CPU devices, one after another, through the one
// training pipeline (calibration included), results returned.
#include "core/engine/compare.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/model/ranker.h"
#include "kernels/cpu/api.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

TEST(EngineCompare, RunsEveryAlgorithmOnFreshDevices) {
  test::EngineProblem p = test::small_problem(2048, 512);
  int made = 0;
  DeviceFactory factory = [&] {
    ++made;
    return test::cpu_devices({"cpu:0", "cpu:1@0.5"}, p.config);
  };
  CompareOptions c = test::compare_options(
      p.config, {Algo::kAdaptive, Algo::kSync, Algo::kAvg, Algo::kEasgd}, 10.0, 2);
  c.base.warmup_epochs = 0.5;
  c.base.target_p1 = 0.5;
  int evals_seen = 0;
  const CompareResult r =
      compare(factory, nullptr, p.train, p.test, c, [&](Algo, const EvalRecord&) { ++evals_seen; });
  EXPECT_EQ(made, 4) << "every run gets fresh devices";
  ASSERT_EQ(r.runs.size(), 4u);
  size_t evals = 0;
  for (const CompareRun& run : r.runs) {
    EXPECT_TRUE(run.error.empty()) << to_string(run.algo) << ": " << run.error;
    EXPECT_FALSE(run.result.evals.empty());
    EXPECT_EQ(run.result.algo, run.algo);
    EXPECT_GT(run.result.best_p1, 0.5) << to_string(run.algo) << " did not learn";
    EXPECT_GE(run.result.time_to_target_s, 0.0) << to_string(run.algo);
    // race_to_budget: every run goes on to the common budget after its target.
    EXPECT_EQ(run.result.stop, StopReason::kMaxEpochs) << to_string(run.algo);
    EXPECT_GE(run.result.epochs, 10.0) << to_string(run.algo);
    EXPECT_TRUE(run.model.params.empty()) << "models are kept only when asked";
    evals += run.result.evals.size();
  }
  EXPECT_EQ(evals_seen, static_cast<int>(evals));
}

TEST(EngineCompare, AFailedRunIsReportedAndTheOthersStillRun) {
  test::EngineProblem p = test::small_problem(512, 128);
  int call = 0;
  DeviceFactory factory = [&] {
    if (call++ == 0) throw DeviceUnavailable("cuda:7 does not exist");
    return test::cpu_devices({"cpu:0"}, p.config);
  };
  CompareOptions c;
  c.config = p.config;
  c.algos = {Algo::kAdaptive, Algo::kSync};
  c.base.max_epochs = 1.0;
  c.base.b0 = 64;
  const CompareResult r = compare(factory, nullptr, p.train, p.test, c);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_NE(r.runs[0].error.find("cuda:7"), std::string::npos);
  EXPECT_TRUE(r.runs[1].error.empty());
  c.keep_going = false;
  call = 0;
  EXPECT_THROW(compare(factory, nullptr, p.train, p.test, c), DeviceUnavailable);
}

// Each run is calibrated as `hetsgd train` calibrates: given forest and tail weights are
// applied, and the metrics it reports are those of the model it would save, loaded on a fresh
// device and ranked through its Ranker.
TEST(EngineCompare, EachRunReportsTheMetricsOfItsCalibratedModel) {
  test::EngineProblem p = test::small_problem(2048, 512);
  Dataset train, val;
  slice_rows(p.train, 0, 1792, &train);
  slice_rows(p.train, 1792, 2048, &val);
  CompareOptions c = test::compare_options(p.config, {Algo::kAdaptive, Algo::kSync}, 2.0, 4);
  c.calibration.forest = 0.5;
  c.calibration.forest_trees = 4;
  c.calibration.tail_weight = 0.5;
  c.calibration.threads = 1;
  c.keep_models = true;
  const CompareResult r = compare([&] { return test::cpu_devices({"cpu:0"}, p.config); }, nullptr,
                                  TrainData{&train, &p.test, &val}, c);
  ASSERT_EQ(r.runs.size(), 2u);
  const std::vector<float> inv = run_propensities(c.base, train);
  for (const CompareRun& run : r.runs) {
    ASSERT_TRUE(run.error.empty()) << to_string(run.algo) << ": " << run.error;
    EXPECT_EQ(run.calibration.forest_weight, 0.5);
    EXPECT_EQ(run.calibration.tail_weight, 0.5);
    ASSERT_NE(run.calibration.forest, nullptr) << to_string(run.algo);
    EXPECT_EQ(run.model.forest, run.calibration.forest);
    EXPECT_EQ(run.model.forest_weight, 0.5);
    ASSERT_FALSE(run.model.params.empty());
    LoadedRanker saved = load_ranker(run.model, [](const ModelConfig& mc) {
      return cpu::make_device(0, mc, DeviceOptions{1, false});
    });
    const RankingMetrics m = evaluate(*saved.ranker, p.test, 5, 2048, 0, &inv);
    for (int at : {1, 3, 5}) {
      EXPECT_DOUBLE_EQ(run.result.final_metrics.p_at(at), m.p_at(at))
          << to_string(run.algo) << " P@" << at;
    }
  }
  // Options that cannot apply fail before any run, whatever keep_going says.
  c.config.loss = Loss::kBce;
  EXPECT_THROW(compare([&] { return test::cpu_devices({"cpu:0"}, p.config); }, nullptr,
                       TrainData{&train, &p.test, &val}, c),
               InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
