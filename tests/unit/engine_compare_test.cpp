// compare(): every algorithm on fresh real CPU devices, one after another, results returned.
#include "core/engine/compare.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
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
  CompareOptions c;
  c.algos = {Algo::kAdaptive, Algo::kSync, Algo::kAvg, Algo::kEasgd};
  c.base.lr0 = 1e-2;
  c.base.b0 = 64;
  c.base.warmup_epochs = 0.5;
  c.base.max_epochs = 10.0;
  c.base.eval_every_rounds = 2;
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

}  // namespace
}  // namespace hetsgd
