// `compare` runs each algorithm as `train` runs it, calibration included: one algorithm with
// the data, options and seed of a `train` gives that training's test metrics, and its record
// (stdout and summary.json) carries the calibration's choices.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_json.h"
#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

using hetsgd::test::CliRun;
using hetsgd::test::record_of;

CliRun run(const std::string& args) { return hetsgd::test::run_cli(args); }

class CompareCalibration : public hetsgd::test::ScratchTest {
 protected:
  CompareCalibration() : ScratchTest("hetsgd_compare_calibration_") {}
  void SetUp() override {
    ScratchTest::SetUp();
    const CliRun g = run("data gen --preset=bibtex --scale=0.2 -o " + tmp("d"));
    ASSERT_EQ(g.code, 0) << g.out;
  }
  // The options both commands get. compare's default stopping rule is 5 s of training (no
  // epoch count), train's an epoch count: both get the same epochs and no time budget.
  std::string common() const {
    return "--train=" + tmp("d_train.txt") + " --test=" + tmp("d_test.txt") +
           " --hidden=16 --devices=cpu:0 --threads=1 --seed=11 --epochs=10 --time-budget=0 "
           "-q --json ";
  }
  nlohmann::json train(const std::string& flags) {
    const CliRun t = run("train " + common() + flags + " --algo=adaptive");
    EXPECT_EQ(t.code, 0) << t.out;
    return record_of(t.out);
  }
};

// A given tail weight (the network's ranking shifted by the prior), a given forest (the
// network's ranking blended with the forest's) and given linear classifiers each change the
// model after training.
TEST_F(CompareCalibration, OneAlgorithmReportsTheModelTrainWouldSave) {
  const nlohmann::json plain = train("--forest=off --tail-weight=0 --linear=off");
  for (const std::string flags : {"--forest=off --tail-weight=0.3 --linear=off",
                                  "--forest=0.5 --forest-trees=5 --tail-weight=0.5 --linear=off",
                                  "--forest=off --tail-weight=0 --linear=0.5"}) {
    SCOPED_TRACE(flags);
    const nlohmann::json tj = train(flags);
    EXPECT_NE(tj["p1"].get<double>(), plain["p1"].get<double>()) << "calibration changed nothing";
    const std::string out = tmp("cmp");
    const CliRun c = run("compare " + common() + flags + " --algos=adaptive --no-plot -o " + out);
    ASSERT_EQ(c.code, 0) << c.out;
    const nlohmann::json cj = record_of(c.out);
    ASSERT_EQ(cj["runs"].size(), 1u) << cj;
    const nlohmann::json& rj = cj["runs"][0];
    ASSERT_EQ(rj["error"], "") << rj;
    for (const char* key :
         {"forest_weight", "tail_weight", "linear_weight", "refit", "selected_round"}) {
      EXPECT_EQ(rj[key], tj[key]) << key;
    }
    EXPECT_EQ(rj.contains("forest_trees"), tj.contains("forest_trees"));
    for (const char* key : {"p1", "p3", "p5"}) {
      EXPECT_EQ(rj[key].get<double>(), tj[key].get<double>()) << key;
      EXPECT_EQ(rj["val"][key].get<double>(), tj["val"][key].get<double>()) << key;
    }
    // summary.json holds the same record.
    std::ifstream in(out + "/summary.json");
    ASSERT_TRUE(in) << "no summary.json";
    const nlohmann::json summary = nlohmann::json::parse(in);
    ASSERT_EQ(summary["runs"].size(), 1u);
    EXPECT_EQ(summary["runs"][0]["forest_weight"], tj["forest_weight"]);
    EXPECT_EQ(summary["runs"][0]["tail_weight"], tj["tail_weight"]);
    EXPECT_EQ(summary["runs"][0]["p1"].get<double>(), tj["p1"].get<double>());
  }
}

// The calibration options are checked as `train` checks them: a bad value is a usage error
// naming the option, before any data is read.
TEST_F(CompareCalibration, ABadCalibrationOptionIsAUsageError) {
  const CliRun c =
      run("compare --synthetic=tiny --algos=adaptive --no-plot --tail-weight=11 -o " + tmp("cmp"));
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find("--tail-weight"), std::string::npos) << c.out;
}

}  // namespace
