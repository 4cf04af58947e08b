// `hetsgd share` with hostile jobs files and jobs that finish or fail: every refusal names the
// jobs file and the key, nothing crashes, and one tenant's failure stops that tenant alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;

// Charts are not what these tests check.
const auto run_cli = hetsgd::test::run_cli_no_charts;

class ShareCli : public hetsgd::test::ScratchTest {
 protected:
  ShareCli() : ScratchTest("hetsgd_share_") {}
  std::string out() const { return (dir_ / "out").string(); }
};

// A two-device jobs file whose round_seconds and first job key are filled in.
std::string jobs_text(const std::string& round_seconds, const std::string& job_extra) {
  return R"({"round_seconds": )" + round_seconds + R"(,
    "device_types": [{"name": "cpu", "devices": ["cpu:0", "cpu:1"]}],
    "tenants": [
      {"name": "a", "job": {"data": "synthetic:bibtex", "hidden": [16], "scale": 0.05)" +
         job_extra + R"(}},
      {"name": "b", "job": {"data": "synthetic:bibtex", "hidden": [16], "scale": 0.05}}],
    "throughput": [[100], [100]]})";
}

TEST_F(ShareCli, BadRoundSecondsAndHugeNumbersNameFileAndKey) {
  for (const std::string v : {"-1", "1e-9", "0"}) {
    const std::string jobs = write("rs.json", jobs_text(v, ""));
    const auto r = run_cli("share --jobs=" + jobs + " --out=" + out());
    EXPECT_EQ(r.code, 1) << v << r.out;
    EXPECT_NE(r.out.find(jobs + ": /round_seconds: expected seconds in [0.001, 86400], got " +
                         (v == "1e-9" ? "1e-09" : v)),
              std::string::npos)
        << r.out;
  }
  const std::string huge = write("huge.json", jobs_text("1e999", ""));
  const auto h = run_cli("share --jobs=" + huge + " --out=" + out());
  EXPECT_EQ(h.code, 1) << h.out;
  EXPECT_NE(h.out.find(huge + ": /round_seconds: number 1e999 is too large"), std::string::npos)
      << h.out;
  EXPECT_EQ(h.out.find("json.exception"), std::string::npos) << h.out;
  for (const std::string flag : {"-1", "nan", "1e-9", "1e9"}) {
    const auto r = run_cli("share --jobs=" + huge + " --round-seconds=" + flag);
    EXPECT_EQ(r.code, 2) << flag << r.out;
    EXPECT_NE(r.out.find("--round-seconds"), std::string::npos) << r.out;
  }
}

TEST_F(ShareCli, DeeplyNestedJobsFileIsRefusedNotACrash) {
  const std::string deep = write(
      "deep.json", "{\"device_types\": " + std::string(100000, '[') + std::string(100000, ']') +
                       ", \"tenants\": [{\"name\": \"a\", \"job\": {\"data\": \"d\"}}]}");
  const auto r = run_cli("share --jobs=" + deep + " --out=" + out());
  EXPECT_EQ(r.code, 1) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find(deep + ": /device_types/0/0/"), std::string::npos) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("nested deeper than 32 levels"), std::string::npos) << r.out.substr(0, 400);
  // Objects nest too (and this one never closes).
  const std::string objects = write("objects.json", std::string(50000, '{'));
  const auto o = run_cli("share --jobs=" + objects + " --out=" + out());
  EXPECT_EQ(o.code, 1) << o.out.substr(0, 400);
}

TEST_F(ShareCli, ResumeCheckpointAndTimeBudgetAreRefusedNotIgnored) {
  for (const std::string key : {"resume", "checkpoint", "checkpoint_every", "time_budget"}) {
    const std::string value = key == "checkpoint_every" || key == "time_budget" ? "5" : "\"x\"";
    const std::string jobs = write("opt.json", jobs_text("1", ", \"" + key + "\": " + value));
    const auto r = run_cli("share --jobs=" + jobs + " --out=" + out());
    EXPECT_EQ(r.code, 1) << key << r.out;
    EXPECT_NE(r.out.find(jobs + ": /tenants/0/job/" + key + ": job option '" + key +
                         "' is not supported"),
              std::string::npos)
        << r.out;
  }
}

TEST_F(ShareCli, AFailingJobStopsAloneAndAFinishedJobReleasesItsDevices) {
  // Tenant "a" reads data that is not there; "c" finishes after one epoch; "b" goes on.
  const std::string jobs = write("run.json", R"({"round_seconds": 0.3,
    "device_types": [{"name": "cpu", "devices": ["cpu:0", "cpu:1"]}],
    "tenants": [
      {"name": "a", "job": {"data": "/nonexistent/train.txt", "hidden": [16]}},
      {"name": "b", "job": {"data": "synthetic:bibtex", "hidden": [16], "scale": 0.05}},
      {"name": "c", "job": {"data": "synthetic:bibtex", "hidden": [16], "scale": 0.02,
                            "epochs": 1}}],
    "throughput": [[100], [100], [100]]})");
  const auto r = run_cli("share --jobs=" + jobs + " --run --rounds=5 --threads=1 --out=" + out());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(jobs + ": /tenants/0 (tenant 'a'): "), std::string::npos) << r.out;
  std::ifstream in(out() + "/enforcement.json");
  ASSERT_TRUE(in.good()) << r.out;
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["rounds"], 5);
  const auto& t = j["tenants"];
  EXPECT_EQ(t[0]["status"], "failed");
  EXPECT_GE(t[0]["failed_round"].get<int>(), 0);
  EXPECT_NE(t[0]["failure"].get<std::string>().find("tenant 'a'"), std::string::npos);
  EXPECT_EQ(t[1]["status"], "present");
  EXPECT_GT(t[1]["samples"].get<double>(), 0.0);
  EXPECT_GT(t[1]["updates"].get<long long>(), 0);
  EXPECT_EQ(t[2]["status"], "finished");
  const int finished = t[2]["finished_round"].get<int>();
  ASSERT_GE(finished, 0);
  // Which rounds "c" holds a device follows from the allocation and the deficit scheduler, not
  // from speed; its whole epoch is one batch (98 rows < b0), which the first of them trains
  // (a round's budget is checked before each batch, and its clock starts at 0). So "c"
  // finishes in the first round it holds a device, with rounds left to show the release.
  int first_held = -1;
  for (const auto& rec : j["round_log"]) {
    if (first_held < 0 && rec["held"][2][0].get<double>() > 0.0) first_held = rec["round"];
  }
  EXPECT_EQ(finished, first_held) << j["round_log"].dump();
  ASSERT_LT(finished, 4) << j["round_log"].dump();
  // From the round after, the finished and failed tenants hold nothing and "b" holds both.
  for (const auto& rec : j["round_log"]) {
    if (rec["round"].get<int>() <= finished) continue;
    EXPECT_EQ(rec["held"][0][0].get<double>(), 0.0) << rec.dump();
    EXPECT_EQ(rec["held"][1][0].get<double>(), 2.0) << rec.dump();
    EXPECT_EQ(rec["held"][2][0].get<double>(), 0.0) << rec.dump();
  }
  bool fail_event = false, finish_event = false;
  for (const auto& e : j["events"]) {
    fail_event = fail_event || (e["kind"] == "fail" && e["tenant"] == "a");
    finish_event = finish_event || (e["kind"] == "finish" && e["tenant"] == "c");
  }
  EXPECT_TRUE(fail_event);
  EXPECT_TRUE(finish_event);
}

TEST_F(ShareCli, WeightedPairsGetTheirWeightRatioUnderOefNoncoop) {
  for (const int w : {3, 10}) {
    const std::string jobs = write("w.json", R"({
      "device_types": [{"name": "fast", "count": 2}, {"name": "slow", "count": 2}],
      "tenants": [{"name": "heavy", "weight": )" +
                                                 std::to_string(w) +
                                                 R"(, "job": {"data": "d"}},
                  {"name": "light", "job": {"data": "d"}}],
      "throughput": [[1000, 300], [600, 500]]})");
    const auto r = run_cli("share --jobs=" + jobs + " --policy=oef-noncoop --json --out=" + out());
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    const auto& p = j["policies"][0];
    for (int type = 0; type < 2; ++type) {
      EXPECT_NEAR(p["tenants"][0]["share"][type].get<double>(), w / (w + 1.0), 1e-6) << r.out;
      EXPECT_NEAR(p["tenants"][1]["share"][type].get<double>(), 1.0 / (w + 1.0), 1e-6) << r.out;
    }
    EXPECT_EQ(p["envy_free"], true);
    EXPECT_EQ(p["sharing_incentive"], true);
    EXPECT_EQ(p["strategy_proof"], true);
  }
}

}  // namespace
