// `hetsgd share --run` ends each tenant's job as `hetsgd train` ends a run: the model chosen
// on its validation rows and calibrated, its test metrics in the report, and the file its job
// names holding that very model (`eval` of it gives the reported metrics).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;

// Charts are not what these tests check.
const auto run_cli = hetsgd::test::run_cli_no_charts;

class ShareModels : public hetsgd::test::ScratchTest {
 protected:
  ShareModels() : ScratchTest("hetsgd_share_models_") {}
  // Two tenants on two CPU devices training one small file each; `a_extra` and `b_extra` are
  // added to their jobs.
  std::string jobs(const std::string& a_extra, const std::string& b_extra) const {
    const std::string data = R"("data": ")" + tmp("d_train.txt") + R"(", "test": ")" +
                             tmp("d_test.txt") + R"(", "hidden": [16], "epochs": 4)";
    return write("jobs.json", R"({"round_seconds": 0.5,
      "device_types": [{"name": "cpu", "devices": ["cpu:0", "cpu:1"]}],
      "tenants": [{"name": "a", "job": {)" +
                                  data + a_extra + R"(}},
                  {"name": "b", "job": {)" +
                                  data + b_extra + R"(}}],
      "throughput": [[100], [100]]})");
  }
  void SetUp() override {
    ScratchTest::SetUp();
    const auto gen = run_cli("data gen --preset=bibtex --scale=0.2 -o " + tmp("d"));
    ASSERT_EQ(gen.code, 0) << gen.out;
  }
};

TEST_F(ShareModels, EachJobEndsWithTheModelTrainWouldSaveAndItsFileScoresAsReported) {
  const std::string a_model = tmp("a.model");
  // a: the choices' defaults (auto forest and tail weight); b: a given tail weight, not saved.
  const auto r = run_cli(
      "share --jobs=" + jobs(R"(, "output": ")" + a_model + R"(")", R"(, "tail_weight": 0.5)") +
      " --run --rounds=40 --json -q -o " + tmp("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const nlohmann::json& models = j.at("enforcement").at("models");
  ASSERT_EQ(models.size(), 2u) << models.dump();
  for (const nlohmann::json& m : models) {
    EXPECT_EQ(m.at("error"), "") << m.dump();
    EXPECT_TRUE(m.contains("val")) << "selected on its validation rows: " << m.dump();
    EXPECT_GE(m.at("selected_round").get<long long>(), 1);
    EXPECT_EQ(m.at("final_eval"), "exact");
  }
  EXPECT_EQ(models[0].at("tenant"), "a");
  EXPECT_EQ(models[0].at("model"), a_model);
  EXPECT_EQ(models[1].at("model"), "");
  EXPECT_EQ(models[1].at("tail_weight").get<double>(), 0.5);
  ASSERT_TRUE(fs::exists(a_model));
  const auto e = run_cli("eval -m " + a_model + " --test " + tmp("d_test.txt") + " --json -q");
  ASSERT_EQ(e.code, 0) << e.out;
  const nlohmann::json ej = nlohmann::json::parse(e.out);
  for (const char* k : {"p1", "p3", "p5"}) {
    EXPECT_NEAR(ej.at(k).get<double>(), models[0].at(k).get<double>(), 1e-12) << k;
  }
}

TEST_F(ShareModels, AnOutputThatCannotBeWrittenOrIsSharedIsRefusedBeforeAnyRound) {
  const std::string missing = tmp("no/such/folder/a.model");
  const auto r = run_cli("share --jobs=" + jobs(R"(, "output": ")" + missing + R"(")", "") +
                         " --run --rounds=2 -o " + tmp("out"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("/tenants/0/job/output"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("enforced"), std::string::npos) << "refused after the run: " << r.out;

  const std::string same = R"(, "output": ")" + tmp("m.model") + R"(")";
  const auto s = run_cli("share --jobs=" + jobs(same, same) + " --run --rounds=2 -o " + tmp("out"));
  EXPECT_EQ(s.code, 1) << s.out;
  EXPECT_NE(s.out.find("/tenants/1/job/output"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("tenant 0's output too"), std::string::npos) << s.out;
  EXPECT_FALSE(fs::exists(tmp("m.model")));
}

}  // namespace
