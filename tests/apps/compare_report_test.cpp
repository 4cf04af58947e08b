// What `hetsgd compare` prints and writes: the table, the curve files in the one JSON layout
// of an evaluation record, and the plot launcher.
#include "apps/compare_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "apps/plot_launcher.h"
#include "apps/report.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd::app {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "compare_report_" + std::to_string(::getpid()) + "_" + name;
}

CompareResult small_comparison() {
  test::EngineProblem p = test::small_problem(1024, 256);
  CompareOptions c = test::compare_options(p.config, {Algo::kAdaptive, Algo::kSync}, 3.0, 1);
  c.base.target_p1 = 0.3;
  int call = 0;
  return compare(
      [&] {
        if (call++ == 2) throw DeviceUnavailable("cuda:7 does not exist");
        return test::cpu_devices({"cpu:0", "cpu:1@0.5"}, p.config);
      },
      nullptr, p.train, p.test, c);
}

TEST(AppCompareReport, TableCurvesAndPlotShareOneRecordLayout) {
  CompareResult r = small_comparison();
  CompareRun failed;
  failed.algo = Algo::kAvg;
  failed.error = "cuda:7 does not exist";
  r.runs.push_back(failed);
  std::ostringstream table;
  print_compare_table(table, r);
  for (const char* name : {"adaptive", "sync", "t@P1>=0.30", "failed: cuda:7 does not exist"}) {
    EXPECT_NE(table.str().find(name), std::string::npos) << name << "\n" << table.str();
  }

  const std::string csv_path = temp_path("curves.csv"), jsonl_path = temp_path("curves.jsonl");
  write_curves_csv(csv_path, r);
  write_curves_jsonl(jsonl_path, r);
  std::size_t evals = 0;
  for (const CompareRun& run : r.runs) evals += run.result.evals.size();
  std::ifstream csv(csv_path);
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line, curves_csv_header());
  std::size_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, evals);
  // Every JSON line is eval_to_json() of its record plus the algorithm: one layout for
  // `compare` curves and `train --log`.
  std::ifstream jsonl(jsonl_path);
  std::size_t objects = 0;
  while (std::getline(jsonl, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("algo") && j.contains("train_loss") && j.contains("test_loss"));
    j.erase("algo");
    EXPECT_EQ(j.size(), eval_to_json(r.runs[0].result.evals[0]).size());
    ++objects;
  }
  EXPECT_EQ(objects, evals);

  // The plot needs python3 + matplotlib; where they exist it must succeed and write the PNG.
  const std::string png = temp_path("p1.png");
  if (!find_plot_python().empty()) {
    EXPECT_TRUE(draw_plot("plot_curves.py", {"--input", csv_path, "--output", png}));
    EXPECT_EQ(::access(png.c_str(), F_OK), 0);
  }
  EXPECT_FALSE(draw_plot("no_such_script.py", {}));
  std::remove(csv_path.c_str());
  std::remove(jsonl_path.c_str());
  std::remove(png.c_str());
}

TEST(AppPlotLauncher, RunsWithoutAShellAndReportsTheExitStatus) {
  // Arguments reach the program as they are: no shell splits or expands them.
  EXPECT_EQ(run_quietly({"sh", "-c", "test \"$0\" = 'a b' && test \"$1\" = '$x'", "a b", "$x"}), 0);
  EXPECT_EQ(run_quietly({"sh", "-c", "exit 3"}), 3);
  EXPECT_EQ(run_quietly({"no-such-program-hetsgd"}), -1);
}

// The record says how its final metrics were ranked: through the index, exactly over every
// test row, or exactly over only the first rows.
TEST(AppReport, FinalEvalNamesWhatTheMetricsCover) {
  TrainResult r;
  r.final_eval_rows = 100;
  EXPECT_EQ(result_to_json(r, 100)["final_eval"], "exact");
  EXPECT_EQ(result_to_json(r, 250)["final_eval"], "exact_drawn_rows");
  EXPECT_EQ(result_to_json(r)["final_eval"], "exact");  // the test set's size unknown
  r.final_indexed = true;
  EXPECT_EQ(result_to_json(r, 250)["final_eval"], "index");
}

}  // namespace
}  // namespace hetsgd::app
