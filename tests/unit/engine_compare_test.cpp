// compare(): every algorithm on fresh real CPU devices, curves to CSV/JSONL, the table, the plot.
#include "core/engine/compare.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "engine_compare_" + std::to_string(::getpid()) + "_" + name;
}

TEST(EngineCompare, RunsEveryAlgorithmAndWritesCurvesTableAndPlot) {
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
  c.curves_csv = temp_path("curves.csv");
  c.curves_jsonl = temp_path("curves.jsonl");
  c.plot_png = temp_path("p1.png");
  c.plot_script = std::string(HETSGD_TEST_DATA_DIR) + "/../../tools/plot_curves.py";
  c.title = "tiny synthetic, cpu:0 + cpu:1@0.5 (emulated)";
  c.plot_python = find_plot_python();  // "" when no python has matplotlib: no plot then
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

  std::ostringstream table;
  print_compare_table(table, r);
  std::printf("%s", table.str().c_str());
  for (const char* name : {"adaptive", "sync", "avg", "easgd", "t@P1>=0.50"}) {
    EXPECT_NE(table.str().find(name), std::string::npos) << name;
  }

  std::ifstream csv(c.curves_csv);
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line, curves_csv_header());
  size_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, evals);
  std::ifstream jsonl(c.curves_jsonl);
  size_t objects = 0;
  while (std::getline(jsonl, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("p1") && j.contains("time_s") && j.contains("device_batch"));
    ++objects;
  }
  EXPECT_EQ(objects, evals);

  // The plot needs python3 + matplotlib; where they exist it must succeed and write the PNG.
  if (!c.plot_python.empty()) {
    EXPECT_EQ(r.plot_status, 0) << r.plot_command;
    EXPECT_EQ(::access(c.plot_png.c_str(), F_OK), 0) << r.plot_command;
  }
  std::remove(c.curves_csv.c_str());
  std::remove(c.curves_jsonl.c_str());
  std::remove(c.plot_png.c_str());
}

TEST(EngineCompare, PlotCommandQuotesItsArguments) {
  EXPECT_EQ(plot_command("tools/plot_curves.py", "a b.csv", "o'k.png", "", 0.0),
            "python3 'tools/plot_curves.py' --input 'a b.csv' --output 'o'\\''k.png'");
  EXPECT_NE(plot_command("s.py", "c.csv", "p.png", "t", 0.62).find("--target 0.6200"),
            std::string::npos);
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
  std::ostringstream table;
  print_compare_table(table, r);
  EXPECT_NE(table.str().find("failed: cuda:7 does not exist"), std::string::npos) << table.str();
  c.keep_going = false;
  call = 0;
  EXPECT_THROW(compare(factory, nullptr, p.train, p.test, c), DeviceUnavailable);
}

}  // namespace
}  // namespace hetsgd
