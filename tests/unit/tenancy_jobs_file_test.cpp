// The jobs file reader and the share report (JSON and table).
#include <gtest/gtest.h>

#include <sys/stat.h>

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
  EXPECT_NE(error_of(bad).find("jobs.json: /tenants/1/weight: expected a weight in [0.001, 1000], "
                               "got -2"),
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
  EXPECT_NE(error_of(zero).find("jobs.json: /throughput/1: tenant 'b' has throughput 0 on every "
                                "device type"),
            std::string::npos)
      << error_of(zero);
}

TEST(TenancyJobsFile, RefusesDuplicateKeysAndAbsurdNumbers) {
  const std::string dup_top = R"({"round_seconds": 1, "round_seconds": 2,
    "device_types": [{"name": "g", "count": 1}], "tenants": [{"name": "a", "job": {"data": "d"}}]})";
  EXPECT_NE(error_of(dup_top).find("jobs.json: /round_seconds: duplicate key"), std::string::npos)
      << error_of(dup_top);
  const std::string dup_deep = R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"data": "d"}},
                {"name": "b", "weight": 1, "weight": 3, "job": {"data": "d"}}]})";
  EXPECT_NE(error_of(dup_deep).find("jobs.json: /tenants/1/weight: duplicate key"),
            std::string::npos)
      << error_of(dup_deep);
  const std::string dup_row = R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"data": "d"}}],
    "throughput": {"a": {"g": 5, "g": 7}}})";
  EXPECT_NE(error_of(dup_row).find("/throughput/a/g: duplicate key"), std::string::npos)
      << error_of(dup_row);
  auto with_throughput = [](const std::string& value) {
    return R"({"device_types": [{"name": "g", "count": 1}, {"name": "h", "count": 1}],
      "tenants": [{"name": "a", "job": {"data": "d"}}], "throughput": [[1, )" +
           value + "]]}";
  };
  EXPECT_EQ(error_of(with_throughput("2")), "");
  EXPECT_EQ(error_of(with_throughput("0")), "");
  for (const std::string absurd : {"1e308", "1e13", "-1", "1e-300", "1e400"}) {
    const std::string err = error_of(with_throughput(absurd));
    EXPECT_NE(err.find("jobs.json: /throughput/0/1: "), std::string::npos) << absurd << ": " << err;
  }
  std::string bad = kMinimal;
  bad.replace(bad.find("\"weight\": 2"), 11, "\"weight\": 1e300");
  EXPECT_NE(error_of(bad).find("/tenants/1/weight: expected a weight in"), std::string::npos)
      << error_of(bad);
  const std::string round = R"({"round_seconds": 1e9, "device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"data": "d"}}]})";
  EXPECT_NE(error_of(round).find("/round_seconds: expected seconds in"), std::string::npos)
      << error_of(round);
  const std::string count = R"({"device_types": [{"name": "g", "count": 5000}],
    "tenants": [{"name": "a", "job": {"data": "d"}}]})";
  EXPECT_NE(error_of(count).find("/device_types/0/count: expected an integer in [1, 4096]"),
            std::string::npos)
      << error_of(count);
  std::string huge = count;
  huge.replace(huge.find("5000"), 4, "18446744073709551615");
  EXPECT_NE(error_of(huge).find("/device_types/0/count: expected an integer in [1, 4096]"),
            std::string::npos)
      << error_of(huge);
  const std::string speed = R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"data": "d"}, "emulated_speed": {"g": 1e-9}}]})";
  EXPECT_NE(error_of(speed).find("/tenants/0/emulated_speed/g: expected a factor in"),
            std::string::npos)
      << error_of(speed);
}

TEST(TenancyJobsFile, ZeroProfiledTenantNamesTheFile) {
  const JobsFile f = parse_jobs_file(R"({"device_types": [{"name": "g", "count": 1}],
    "tenants": [{"name": "a", "job": {"data": "d"}}, {"name": "lazy", "job": {"data": "d"}}]})",
                                     "prof.json");
  try {
    make_instance(f, [](int tenant, const std::string&) { return tenant == 1 ? 0.0 : 5.0; });
    ADD_FAILURE() << "a tenant profiled at 0 everywhere was accepted";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("prof.json: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("lazy"), std::string::npos) << msg;
  }
}

TEST(TenancyJobsFile, RefusesSpecialAndOversizedFilesByName) {
  auto io_error_of = [](const std::string& path) -> std::string {
    try {
      read_jobs_file(path);
    } catch (const IoError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(io_error_of("/dev/zero").find("/dev/zero: jobs file is a device"), std::string::npos)
      << io_error_of("/dev/zero");
  const std::string dir = ::testing::TempDir();
  EXPECT_NE(io_error_of(dir).find("is a directory"), std::string::npos) << io_error_of(dir);
  const std::string fifo = dir + "/tenancy_jobs_fifo.json";
  std::remove(fifo.c_str());
  if (mkfifo(fifo.c_str(), 0600) == 0) {
    EXPECT_NE(io_error_of(fifo).find(fifo + ": jobs file is a FIFO"), std::string::npos)
        << io_error_of(fifo);
    std::remove(fifo.c_str());
  }
  const std::string big = dir + "/tenancy_jobs_big.json";
  {
    std::ofstream out(big, std::ios::binary);
    out << std::string(kMaxJobsFileBytes + 10, ' ');
  }
  EXPECT_NE(io_error_of(big).find("bytes, more than the"), std::string::npos) << io_error_of(big);
  std::remove(big.c_str());
  EXPECT_NE(io_error_of("/nonexistent/share.json").find("/nonexistent/share.json: "),
            std::string::npos);
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
