// The jobs file reader and the share report (JSON and table).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/tenancy/jobs_file.h"
#include "core/tenancy/share_report.h"
#include "core/tenancy/share_runner.h"

namespace hetsgd::tenancy {
namespace {

std::string example_path() {
  return std::string(HETSGD_TEST_DATA_DIR) + "/../../tools/share_example.json";
}

// Parses `text` and returns the error message (empty when it parsed).
std::string error_of(const std::string& text) {
  try {
    parse_jobs_file(text, "jobs.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kMinimal = R"({"device_types": [{"name": "g", "count": 2}],
  "tenants": [{"name": "a", "job": {"data": "synthetic:bibtex"}},
              {"name": "b", "weight": 2, "job": {"data": "x.txt"}}],
  "throughput": [[10], [20]]})";

TEST(TenancyJobsFile, ReadsTheExampleAndAppliesEmulation) {
  const JobsFile f = read_jobs_file(example_path());
  ASSERT_EQ(f.tenants.size(), 3u);
  ASSERT_EQ(f.types.size(), 2u);
  EXPECT_EQ(f.types[1].devices[0].speed, 0.5);
  EXPECT_EQ(f.tenants[0].job.hidden, std::vector<int>{256});
  EXPECT_EQ(f.tenants[0].job.options.at("lr"), "0.1");
  EXPECT_EQ(f.tenants[1].job.options.at("batch_policy"), "proportional");
  EXPECT_EQ(f.tenants[2].arrive_round, 5);
  const Instance inst = make_instance(f);
  EXPECT_TRUE(inst.emulated);
  EXPECT_DOUBLE_EQ(inst.s(0, 1), 300.0);  // 600 * 0.5 (emulated)
  EXPECT_DOUBLE_EQ(inst.s(1, 0), 600.0);  // 800 * 0.75 (emulated)
  EXPECT_DOUBLE_EQ(inst.s(2, 0), 1000.0);
  const SharingSetup setup = make_setup(f);
  EXPECT_DOUBLE_EQ(setup.speed_factor(0, 1), 0.5);
  EXPECT_EQ(setup.arrive_round[2], 5);
}

TEST(TenancyJobsFile, ThroughputFromTheProfilerAndPresentDevices) {
  const std::string text = R"({"device_types": "present",
    "tenants": [{"name": "a", "job": {"data": "synthetic:bibtex"}}]})";
  const JobsFile f = parse_jobs_file(text, "p.json");
  EXPECT_TRUE(f.types_from_present);
  const std::vector<DeviceId> present = {DeviceId::cpu(0), DeviceId::cpu(1),
                                         parse_device_id("cpu:2@0.5")};
  const Instance inst = make_instance(
      f, [](int, const std::string& type) { return type == "cpu" ? 100.0 : 40.0; }, present);
  ASSERT_EQ(inst.num_types(), 2);
  EXPECT_EQ(inst.counts[0], 2);
  EXPECT_EQ(inst.types[1], "cpu@0.5");
  EXPECT_DOUBLE_EQ(inst.s(0, 1), 40.0);
  EXPECT_THROW(make_instance(f, nullptr, present), InvalidArgument);  // nothing to measure with
}

TEST(TenancyJobsFile, ErrorsNameFileAndJsonPath) {
  EXPECT_EQ(error_of(kMinimal), "");
  std::string bad = kMinimal;
  bad.replace(bad.find("\"weight\": 2"), 11, "\"weight\": -2");
  EXPECT_NE(error_of(bad).find("jobs.json: /tenants/1/weight: expected a number > 0, got -2"),
            std::string::npos)
      << error_of(bad);
  EXPECT_NE(error_of(R"({"device_types": [{"name": "g", "devices": ["tpu:0"]}], "tenants": []})")
                .find("jobs.json: /device_types/0/devices/0: "),
            std::string::npos);
  EXPECT_NE(error_of(R"({"device_types": [{"name": "g", "count": 0}], "tenants": []})")
                .find("/device_types/0/count"),
            std::string::npos);
  const std::string rows = R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"data": "d"}}], "throughput": [[1, 2]]})";
  EXPECT_NE(error_of(rows).find("/throughput/0: expected 1 numbers"), std::string::npos)
      << error_of(rows);
  const std::string typo = R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "wieght": 1, "job": {"data": "d"}}]})";
  EXPECT_NE(error_of(typo).find("/tenants/0/wieght: unknown key"), std::string::npos)
      << error_of(typo);
  const std::string nojob = R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"hidden": [0]}}]})";
  EXPECT_NE(error_of(nojob).find("/tenants/0/job/hidden/0"), std::string::npos) << error_of(nojob);
  // Syntax errors give line and column.
  EXPECT_NE(error_of("{\n  \"tenants\": [,]\n}").find("jobs.json:2:"), std::string::npos)
      << error_of("{\n  \"tenants\": [,]\n}");
  EXPECT_THROW(read_jobs_file("/nonexistent/share.json"), IoError);
  // A tenant whose measured row is all zero is rejected by the instance validation.
  std::string zero = kMinimal;
  zero.replace(zero.find("[[10], [20]]"), 12, "[[10], [0]]");
  EXPECT_THROW(make_instance(parse_jobs_file(zero, "z.json")), InvalidArgument);
}

TEST(TenancyShareReport, ComparesPoliciesAndWritesJson) {
  const Instance inst = make_instance(read_jobs_file(example_path()));
  const ShareReport rep = compare_policies(inst);
  ASSERT_EQ(rep.policies.size(), policy_names().size());
  const PolicyReport& coop = rep.policies[0];
  EXPECT_EQ(coop.policy, "oef-coop");
  EXPECT_TRUE(coop.envy_free);
  EXPECT_TRUE(coop.sharing_incentive);
  for (const auto& p : rep.policies) {
    double sum = 0;
    for (const auto& t : p.tenants) sum += t.throughput;
    EXPECT_NEAR(sum, p.total_throughput, 1e-9);
    if (p.policy == "equal" || p.policy == "gavel") {
      EXPECT_GE(coop.total_utility, p.total_utility - 1e-6);
    }
  }
  std::ostringstream table;
  print_share_table(rep, table);
  EXPECT_NE(table.str().find("EMULATED"), std::string::npos);
  EXPECT_NE(table.str().find("oef-noncoop"), std::string::npos);
  const std::string path = ::testing::TempDir() + "tenancy_report.json";
  write_share_json(rep, path);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["policies"].size(), rep.policies.size());
  EXPECT_EQ(j["policies"][0]["tenants"][2]["name"], "carol");
  EXPECT_TRUE(j["emulated"].get<bool>());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hetsgd::tenancy
