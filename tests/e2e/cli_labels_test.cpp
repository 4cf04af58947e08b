// Labels that say what they are: `train --log` ends with the saved model's metrics and says
// which rows each in-training evaluation scored, `compare` names its sampled splits as `train`
// does, and `--deterministic` on several devices says what it turns off.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/cli_json.h"
#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

using hetsgd::test::CliRun;
using hetsgd::test::record_of;

// Charts are not what these tests check: without the tools folder no plotter is started.
CliRun run(const std::string& args) {
  return hetsgd::test::run_cli(args, "HETSGD_TOOLS_DIR=/nonexistent COLUMNS=200");
}

class CliLabels : public hetsgd::test::ScratchTest {
 protected:
  CliLabels() : ScratchTest("hetsgd_cli_labels_") {}
};

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The in-training records are the network before calibration on the first 20 rows; the last
// record is the saved model's, with the numbers --json reports (a calibrated model: forest and
// prior chosen on the validation rows).
TEST_F(CliLabels, TheLogEndsWithTheSavedModelsMetrics) {
  const std::string log = tmp("log.jsonl"), model = tmp("m.model");
  const CliRun t =
      run("train --synthetic=bibtex --scale=0.05 --epochs=2 --hidden=8 --threads=1 "
          "--eval-max-points=20 --json -q --log=" +
          log + " -o " + model);
  ASSERT_EQ(t.code, 0) << t.out;
  const nlohmann::json summary = record_of(t.out);
  const std::vector<nlohmann::json> records = read_jsonl(log);
  ASSERT_GE(records.size(), 2u) << t.out;
  for (std::size_t i = 0; i + 1 < records.size(); ++i) {
    const nlohmann::json& r = records[i];
    EXPECT_EQ(r.value("record", ""), "in_training") << r.dump();
    EXPECT_EQ(r.value("test_rows", -1), 20) << r.dump();
    EXPECT_EQ(r.value("val_rows", -1), 20) << r.dump();
    EXPECT_EQ(r.value("sampled", false), true) << r.dump();
  }
  const nlohmann::json& last = records.back();
  ASSERT_EQ(last.value("record", ""), "final") << last.dump();
  for (const char* k : {"p1", "p3", "p5", "ndcg5", "final_eval", "final_eval_rows", "val",
                        "selected_round", "model", "forest_weight", "tail_weight"}) {
    ASSERT_TRUE(summary.contains(k)) << k;
    EXPECT_EQ(last[k], summary[k]) << k << "\n" << last.dump() << "\n" << summary.dump();
  }
  EXPECT_EQ(last["model"], model);
}

// Each algorithm's progress line names the sample its metrics are from, as train's does.
TEST_F(CliLabels, CompareNamesItsSampledSplitsAsTrainDoes) {
  const std::string common =
      " --synthetic=bibtex --scale=0.05 --epochs=1 --hidden=8 --threads=1 --eval-max-points=20";
  const CliRun t = run("train" + common);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("val[20 drawn] P@1"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("test[20 drawn] P@1"), std::string::npos) << t.out;
  const CliRun c =
      run("compare --algos=adaptive --time-budget=0 --no-plot -o " + tmp("c") + common);
  ASSERT_EQ(c.code, 0) << c.out;
  std::istringstream lines(c.out);
  std::string line;
  int progress = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("adaptive: epoch ", 0) != 0) continue;
    ++progress;
    EXPECT_NE(line.find("test[20 drawn] P@1"), std::string::npos) << line;
    EXPECT_NE(line.find("val[20 drawn] P@1"), std::string::npos) << line;
  }
  EXPECT_GE(progress, 1) << c.out;
  // Every row evaluated: the plain names.
  const CliRun all = run("compare --algos=adaptive --time-budget=0 --no-plot -o " + tmp("c") +
                         " --synthetic=bibtex --scale=0.05 --epochs=1 --hidden=8 --threads=1");
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_NE(all.out.find(" test P@1"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("test["), std::string::npos) << all.out;
}

// --deterministic gives up routing and batch adaptation for reproducibility: with several
// devices train and compare say so on stderr (not with -q); with one device there is nothing
// to give up.
TEST_F(CliLabels, DeterministicOnSeveralDevicesSaysWhatItTurnsOff) {
  const std::string data = " --synthetic=bibtex --scale=0.05 --epochs=1 --hidden=8 --threads=1";
  const std::string notice = "--deterministic on 2 devices: no routing or batch adaptation";
  const CliRun two = run("train --devices=cpu:0,cpu:1 --deterministic" + data);
  ASSERT_EQ(two.code, 0) << two.out;
  EXPECT_NE(two.out.find("hetsgd train: " + notice), std::string::npos) << two.out;
  const CliRun quiet = run("train --devices=cpu:0,cpu:1 --deterministic -q" + data);
  ASSERT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("--deterministic"), std::string::npos) << quiet.out;
  const CliRun one = run("train --devices=cpu:0 --deterministic" + data);
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(one.out.find("--deterministic"), std::string::npos) << one.out;
  const CliRun plain = run("train --devices=cpu:0,cpu:1" + data);
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("--deterministic"), std::string::npos) << plain.out;
  const CliRun c =
      run("compare --algos=adaptive --time-budget=0 --no-plot --devices=cpu:0,cpu:1 "
          "--deterministic -o " +
          tmp("c") + data);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("hetsgd compare: " + notice), std::string::npos) << c.out;
}

}  // namespace
