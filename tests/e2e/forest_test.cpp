// `train --forest`: the label forest is in the saved model (eval and predict agree with the
// reported test metrics), `auto` picks the weight by the rule it reports, and bad values are
// refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_json.h"
#include "tests/common/cli_run.h"
#include "tests/common/generated_data_test.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::test {
namespace {

namespace fs = std::filesystem;

class Forest : public GeneratedDataTest {
 protected:
  Forest() : GeneratedDataTest("hetsgd_forest_") {}
  CliRun train(const std::string& flags, const std::string& model) {
    return train_on_data("--hidden=16 --epochs=5 --threads=1 --forest-trees=8 -q --json -o " +
                         model + " " + flags);
  }
};

// A given weight is saved with the forest: `eval` of the file reproduces the reported test
// metrics, which differ from the network's alone.
TEST_F(Forest, TheBlendIsInTheSavedModel) {
  // Without the classifiers, which at U = 1 would leave the forest no say in the ranking.
  const CliRun t0 = train("--forest=off --tail-weight=0 --linear=off", tmp("plain.model"));
  const CliRun t1 = train("--forest=0.5 --tail-weight=0 --linear=off", tmp("blend.model"));
  ASSERT_EQ(t0.code, 0) << t0.out;
  ASSERT_EQ(t1.code, 0) << t1.out;
  const nlohmann::json plain = record_of(t0.out), blend = record_of(t1.out);
  EXPECT_EQ(plain["forest_weight"].get<double>(), 0.0);
  EXPECT_FALSE(plain.contains("forest_grid"));
  EXPECT_EQ(blend["forest_weight"].get<double>(), 0.5);
  EXPECT_GT(blend["forest_time_s"].get<double>(), 0.0);
  EXPECT_NE(p135(plain), p135(blend));
  const nlohmann::json ej = eval_on_data(tmp("blend.model"));
  ASSERT_FALSE(ej.empty());
  EXPECT_NEAR(blend["p1"].get<double>(), ej["p1"].get<double>(), 1e-9);
  EXPECT_NEAR(blend["p3"].get<double>(), ej["p3"].get<double>(), 1e-9);
  EXPECT_NEAR(blend["p5"].get<double>(), ej["p5"].get<double>(), 1e-9);
  // A damaged file is refused, naming it, and exits 1.
  const std::string bytes = read_file_bytes(tmp("blend.model"));
  std::ofstream(tmp("cut.model"), std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  const CliRun cut = run_cli("eval -m " + tmp("cut.model") + " -d " + tmp("d_test.txt"));
  EXPECT_EQ(cut.code, 1) << cut.out;
  EXPECT_NE(cut.out.find("cut.model"), std::string::npos) << cut.out;
  // predict's scores are the blend's probabilities, whatever --scores says.
  const std::string query = " -d " + tmp("d_test.txt") + " -k 3 --threads=1 -q";
  const CliRun raw = run_cli("predict -m " + tmp("blend.model") + query);
  const CliRun prob = run_cli("predict -m " + tmp("blend.model") + query + " --scores=probability");
  ASSERT_EQ(raw.code, 0) << raw.out;
  EXPECT_EQ(raw.out, prob.out);
  const double top = std::stod(raw.out.substr(raw.out.find(':') + 1));
  EXPECT_GT(top, 0.0);
  EXPECT_LE(top, 1.0);
}

// auto reports every weight's validation metrics and keeps the best one (the smallest of ties).
TEST_F(Forest, AutoKeepsTheWeightOfTheBestValidationSum) {
  const CliRun t = train("", tmp("auto.model"));
  ASSERT_EQ(t.code, 0) << t.out;
  const nlohmann::json j = record_of(t.out);
  ASSERT_TRUE(j.contains("forest_grid")) << t.out;
  const nlohmann::json& grid = j["forest_grid"];
  ASSERT_EQ(grid.size(), 11u);
  double best = -1.0, pick = -1.0;
  for (const nlohmann::json& row : grid) {
    if (p135(row) > best) best = p135(row), pick = row["forest_weight"].get<double>();
  }
  EXPECT_EQ(j["forest_weight"].get<double>(), pick);
}

// Every stage's choice is in the file: `eval` of the saved model gives the reported test
// metrics, whichever end each grid picks (a kept forest with the prior's grid was once
// reported through the prior's last grid weight, not the saved one).
TEST_F(Forest, EveryCalibrationStageReportsTheSavedModel) {
  for (const std::string flags : {"--forest=0.5 --tail-weight=auto", "--forest=off --tail-weight=1",
                                  "--forest=1 --tail-weight=auto", "--forest=0.5 --refit", ""}) {
    const CliRun t = train(flags, tmp("m.model"));
    ASSERT_EQ(t.code, 0) << flags << "\n" << t.out;
    const nlohmann::json j = record_of(t.out);
    const CliRun e = run_cli("eval -m " + tmp("m.model") + " -d " + tmp("d_test.txt") +
                             " --threads=1 --json -q");
    ASSERT_EQ(e.code, 0) << e.out;
    const nlohmann::json ej = record_of(e.out);
    for (const char* key : {"p1", "p3", "p5"}) {
      EXPECT_NEAR(j[key].get<double>(), ej[key].get<double>(), 1e-9) << flags << " " << key;
    }
    // A refit says so, and its forest grew on the validation rows too.
    const bool refit = flags.find("--refit") != std::string::npos;
    EXPECT_EQ(j["refit"].get<bool>(), refit) << flags;
    if (refit) {
      EXPECT_GT(j["forest_rows"].get<int>(), 0);
    }
  }
}

// The forest's auto grid picks each of its ends on data made for it, and every time the file
// scores what the run reported: a small network on topic rows leans on the forest (weight
// above 0); a wide, long-trained one leaves it within its noise (no forest). No prior gains
// more than its noise on these rows (tail weight 0; calibrate_test keeps one where it does).
TEST_F(Forest, TheAutoGridsPickEitherEndAndTheFileScoresAsReported) {
  const CliRun g = run_cli("data gen --preset=eurlex-4k --scale=0.05 -o " + tmp("e"));
  ASSERT_EQ(g.code, 0) << g.out;
  struct Case {
    std::string data, flags;
    bool forest, tail;  // the end each grid must pick: above 0 (true) or 0
  };
  const std::string d = " --train=" + tmp("d_train.txt") + " --test=" + tmp("d_test.txt");
  const std::string e = " --train=" + tmp("e_train.txt") + " --test=" + tmp("e_test.txt");
  for (const Case& c :
       {Case{d, "--hidden=16 --epochs=5", true, false},
        Case{d, "--hidden=256 --epochs=60 --lr=0.01 --lambda=0 --warmup-epochs=0.5", false, false},
        Case{e, "--hidden=16 --epochs=5", true, false}}) {
    const CliRun t = run_cli("train" + c.data + " --forest-trees=8 --threads=1 -q --json -o " +
                             tmp("m.model") + " " + c.flags);
    ASSERT_EQ(t.code, 0) << c.flags << "\n" << t.out;
    const nlohmann::json j = record_of(t.out);
    ASSERT_TRUE(j.contains("forest_grid") && j.contains("tail_weight_grid")) << t.out;
    EXPECT_EQ(j["forest_weight"].get<double>() > 0.0, c.forest) << c.flags << "\n" << j;
    EXPECT_EQ(j["tail_weight"].get<double>() > 0.0, c.tail) << c.flags << "\n" << j;
    const std::string test = c.data.substr(c.data.find("--test=") + 7);
    const CliRun ev =
        run_cli("eval -m " + tmp("m.model") + " -d " + test + " --threads=1 --json -q");
    ASSERT_EQ(ev.code, 0) << ev.out;
    const nlohmann::json ej = record_of(ev.out);
    for (const char* key : {"p1", "p3", "p5"}) {
      EXPECT_NEAR(j[key].get<double>(), ej[key].get<double>(), 1e-9) << c.flags << " " << key;
    }
  }
}

// A weight the model cannot blend is refused before the training (100,000 epochs would time
// the test out), with no model written.
TEST_F(Forest, AnImpossibleWeightIsRefusedBeforeTraining) {
  for (const std::string flags : {"--forest=0.5 --loss=bce", "--forest=1 --loss=bce"}) {
    const CliRun t =
        run_cli("train --train=" + tmp("d_train.txt") + " --hidden=16 --epochs=100000 " +
                "--threads=1 -q -o " + tmp("never.model") + " " + flags);
    EXPECT_EQ(t.code, 1) << flags << "\n" << t.out;
    EXPECT_NE(t.out.find("--forest"), std::string::npos) << t.out;
    EXPECT_FALSE(fs::exists(tmp("never.model")));
  }
}

TEST_F(Forest, BadValuesAreRefused) {
  const CliRun big = train("--forest=1.5", tmp("x.model"));
  EXPECT_EQ(big.code, 2) << big.out;
  EXPECT_NE(big.out.find("--forest"), std::string::npos) << big.out;
  const CliRun word = train("--forest=yes", tmp("x.model"));
  EXPECT_EQ(word.code, 2) << word.out;
  // A weight needs softmax probabilities; auto passes over a bce model quietly.
  const CliRun bce = train("--forest=0.5 --loss=bce", tmp("x.model"));
  EXPECT_EQ(bce.code, 1) << bce.out;
  EXPECT_NE(bce.out.find("softmax"), std::string::npos) << bce.out;
  const CliRun bce_auto = train("--loss=bce", tmp("y.model"));
  ASSERT_EQ(bce_auto.code, 0) << bce_auto.out;
  EXPECT_EQ(record_of(bce_auto.out)["forest_weight"].get<double>(), 0.0);
}

}  // namespace
}  // namespace hetsgd::test
