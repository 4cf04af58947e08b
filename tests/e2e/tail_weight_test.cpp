// `train --tail-weight`: the propensity prior is in the saved model (eval agrees with the
// reported test metrics), `auto` picks by the rule it reports, and bad values are usage errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_json.h"
#include "tests/common/cli_run.h"
#include "tests/common/generated_data_test.h"

namespace hetsgd::test {
namespace {

namespace fs = std::filesystem;

CliRun run(const std::string& args) { return run_cli(args); }

class TailWeight : public GeneratedDataTest {
 protected:
  TailWeight() : GeneratedDataTest("hetsgd_tail_weight_") {}
  // Trains with `flags`, saves to `model`, returns the JSON record.
  nlohmann::json train(const std::string& flags, const std::string& model) {
    const CliRun t = train_on_data("--hidden=16 --threads=1 -q --json -o " + model + " " + flags);
    EXPECT_EQ(t.code, 0) << t.out;
    return record_of(t.out);
  }
};

// Training-set count of each label of an XC file.
std::map<int, int> label_counts(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::map<int, int> counts;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == ' ') continue;
    std::istringstream labels(line.substr(0, line.find(' ')));
    std::string id;
    while (std::getline(labels, id, ',')) ++counts[std::stoi(id)];
  }
  return counts;
}

// Mean training count of the top-1 label `predict` gives each row (labels seen in training
// only count as what they are: an unseen label counts 0).
double mean_top1_count(const CliRun& predicted, const std::map<int, int>& counts) {
  std::istringstream lines(predicted.out);
  std::string line;
  double sum = 0.0;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line.find(':') == std::string::npos) continue;
    const int label = std::stoi(line.substr(0, line.find(':')));
    const auto it = counts.find(label);
    sum += it == counts.end() ? 0.0 : it->second;
    ++rows;
  }
  EXPECT_GT(rows, 0) << predicted.out;
  return rows > 0 ? sum / rows : 0.0;
}

// A weight moves rare labels up in the saved model: its top-1 labels are rarer in training
// than the unweighted model's, never a label training did not hold, and `eval` of the file
// reproduces the reported test metrics. No forest and no linear classifiers: at a high weight
// the network's biases, and the prior in them, would no longer rank.
TEST_F(TailWeight, TheWeightIsInTheSavedModelAndRanksRareLabelsHigher) {
  const std::string flags = "--epochs=10 --forest=off --linear=off ";
  const nlohmann::json plain = train(flags + "--tail-weight=0", tmp("plain.model"));
  const nlohmann::json tail = train(flags + "--tail-weight=1", tmp("tail.model"));
  EXPECT_EQ(plain["tail_weight"].get<double>(), 0.0);
  EXPECT_EQ(tail["tail_weight"].get<double>(), 1.0);
  EXPECT_FALSE(plain.contains("tail_weight_grid"));
  const std::map<int, int> counts = label_counts(tmp("d_train.txt"));
  const std::string query = " -d " + tmp("d_test.txt") + " -k 1 --threads=1 -q";
  const CliRun p0 = run("predict -m " + tmp("plain.model") + query);
  const CliRun p1 = run("predict -m " + tmp("tail.model") + query);
  ASSERT_EQ(p0.code, 0) << p0.out;
  ASSERT_EQ(p1.code, 0) << p1.out;
  const double head = mean_top1_count(p0, counts), rare = mean_top1_count(p1, counts);
  EXPECT_LT(rare, head);
  EXPECT_GT(rare, 0.0) << "the prior promoted labels that training never held";
  const nlohmann::json ej = eval_on_data(tmp("tail.model"));
  ASSERT_FALSE(ej.empty());
  EXPECT_NEAR(tail["p1"].get<double>(), ej["p1"].get<double>(), 1e-9);
  EXPECT_NEAR(tail["p5"].get<double>(), ej["p5"].get<double>(), 1e-9);
}

// auto reports every weight's validation metrics and keeps the one of the highest validation
// P@1 + P@3 + P@5, a weight above 0 only where its gain over 0 (reported with its standard
// error) is more than 2 of them; the reported validation metrics are the kept weight's.
TEST_F(TailWeight, AutoKeepsTheBestWeightOnlyWhereItsGainExceedsItsNoise) {
  const nlohmann::json j = train("--epochs=3", tmp("auto.model"));
  ASSERT_TRUE(j.contains("tail_weight_grid")) << j;
  const nlohmann::json& grid = j["tail_weight_grid"];
  ASSERT_EQ(grid.size(), 6u);
  EXPECT_EQ(grid[0]["tail_weight"].get<double>(), 0.0);
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i)
    if (p135(grid[i]) > p135(grid[best])) best = i;
  double want = 0.0;
  if (best > 0) {
    ASSERT_TRUE(j.contains("tail_gain")) << j;
    const double gain = j["tail_gain"].get<double>();
    EXPECT_NEAR(gain, p135(grid[best]) - p135(grid[0]), 1e-9);
    if (gain > 2.0 * j["tail_gain_se"].get<double>()) want = grid[best]["tail_weight"];
  }
  EXPECT_EQ(j["tail_weight"].get<double>(), want) << grid;
  for (const nlohmann::json& row : grid) {
    if (row["tail_weight"].get<double>() == want) {
      EXPECT_NEAR(p135(j["val"]), p135(row), 1e-12) << j;
    }
  }
  // Without validation data auto is 0 and tries nothing.
  const nlohmann::json none = train("--epochs=3 --val-fraction=0", tmp("none.model"));
  EXPECT_EQ(none["tail_weight"].get<double>(), 0.0);
  EXPECT_FALSE(none.contains("tail_weight_grid"));
}

TEST_F(TailWeight, BadValuesAreUsageErrorsNamingTheOption) {
  for (const std::string bad : {"-1", "11", "lots", ""}) {
    const CliRun t = run("train --train=" + tmp("d_train.txt") + " --epochs=1 --hidden=8 -q " +
                         "--tail-weight=" + bad);
    EXPECT_EQ(t.code, 2) << bad << "\n" << t.out;
    EXPECT_NE(t.out.find("--tail-weight"), std::string::npos) << bad << "\n" << t.out;
  }
}

}  // namespace
}  // namespace hetsgd::test
