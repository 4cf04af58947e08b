// Keep-best scratch files (`<output>.best.<pid>`, else `<checkpoint>.best.<pid>`, else
// `$TMPDIR/hetsgd-best.<pid>`) never outlive their run: removed when it ends, when it fails,
// when a second signal ends it at once, and by the next run when it was killed. A signal while
// a large model is allocated ends the run within a moment, exit 130, nothing written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using hetsgd::test::CliRun;
using hetsgd::test::run_cli;
using hetsgd::test::run_shell;

class CliScratch : public hetsgd::test::ScratchTest {
 protected:
  CliScratch() : ScratchTest("hetsgd_scratch_") {}
  /// Names in the test folder that contain `part`.
  std::vector<std::string> files_with(const std::string& part) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name.find(part) != std::string::npos) out.push_back(name);
    }
    return out;
  }
  std::string listing() const {
    std::string s;
    for (const auto& e : fs::directory_iterator(dir_)) s += e.path().filename().string() + " ";
    return s;
  }
};

// A pid no process can have (above the kernel's pid_max limit of 2^22): its files are stale.
constexpr const char* kDeadPid = "999999999";

TEST_F(CliScratch, EveryRunRemovesItsScratchWhereverItLives) {
  const std::string env = "TMPDIR=" + dir_.string();
  // Beside -o, beside --checkpoint, in $TMPDIR; keep-best is on (a validation split).
  for (const std::string& where :
       {" -o " + tmp("m.model"), " --checkpoint=" + tmp("m.ckpt"), std::string()}) {
    const CliRun r =
        run_cli("train --synthetic=bibtex --scale=0.1 --epochs=2 -q --json" + where, env);
    ASSERT_EQ(r.code, 0) << where << ": " << r.out;
    EXPECT_TRUE(files_with(".best.").empty()) << where << ": " << listing();
    EXPECT_TRUE(files_with("hetsgd-best").empty()) << where << ": " << listing();
  }
  const CliRun c = run_cli(
      "compare --synthetic=bibtex --scale=0.1 --algos=adaptive "
      "--time-budget=0.5 --no-plot -q -o " +
      tmp("cmp"));
  ASSERT_EQ(c.code, 0) << c.out;
  for (const auto& e : fs::directory_iterator(dir_ / "cmp")) {
    EXPECT_EQ(e.path().filename().string().find(".best."), std::string::npos) << e.path();
  }
  // An error after the scratch was written: the only device fails (no device left).
  const CliRun f = run_cli(
      "train --synthetic=bibtex --scale=0.2 --epochs=100000 "
      "--inject-fault=0:after=60 -o " +
      tmp("f.model"));
  EXPECT_EQ(f.code, 1) << f.out;
  EXPECT_TRUE(files_with(".best.").empty()) << listing();
  EXPECT_FALSE(fs::exists(tmp("f.model"))) << listing();
}

TEST_F(CliScratch, StaleScratchOfDeadProcessesIsRemovedByTheNextRun) {
  const std::string live = std::to_string(::getpid());  // this test: a running process
  for (const std::string& name : {std::string("m.model.best.") + kDeadPid, "m.model.best." + live,
                                  std::string("hetsgd-best.") + kDeadPid, "hetsgd-best." + live,
                                  std::string("m.model.best.notapid")}) {
    std::ofstream(tmp(name)) << "scratch";
  }
  const CliRun r =
      run_cli("train --synthetic=bibtex --scale=0.1 --epochs=1 -q -o " + tmp("m.model"),
              "TMPDIR=" + dir_.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(tmp(std::string("m.model.best.") + kDeadPid))) << listing();
  EXPECT_FALSE(fs::exists(tmp(std::string("hetsgd-best.") + kDeadPid))) << listing();
  EXPECT_TRUE(fs::exists(tmp("m.model.best." + live))) << listing();
  EXPECT_TRUE(fs::exists(tmp("hetsgd-best." + live))) << listing();
  EXPECT_TRUE(fs::exists(tmp("m.model.best.notapid"))) << listing();
}

// SIGKILL leaves the scratch file (nothing can run); the next run with that output removes it.
TEST_F(CliScratch, AKilledRunsScratchIsRemovedByTheNextRun) {
  const std::string script =
      std::string(HETSGD_CLI) + " train --synthetic=bibtex --scale=0.2 --epochs=100000 -o " +
      tmp("m.model") + " > " + tmp("log") + " 2>&1 & pid=$!; " + "for i in $(seq 1200); do ls " +
      dir_.string() +
      " | grep -q best && break; sleep 0.05; done; kill -KILL $pid; wait $pid; echo rc=$?";
  const std::string out = run_shell(script);
  EXPECT_NE(out.find("rc=137"), std::string::npos) << out;
  ASSERT_EQ(files_with(".best.").size(), 1u) << listing();
  const CliRun r =
      run_cli("train --synthetic=bibtex --scale=0.1 --epochs=1 -q -o " + tmp("m.model"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(files_with(".best.").empty()) << listing();
}

// The first signal stops at a batch boundary; a second one exits at once, and the scratch
// file goes with it.
TEST_F(CliScratch, ASecondSignalExitsAtOnceAndRemovesTheScratch) {
  const std::string script =
      std::string(HETSGD_CLI) + " train --synthetic=delicious --scale=0.3 --epochs=100000 -o " +
      tmp("m.model") + " > " + tmp("log") + " 2>&1 & pid=$!; " + "for i in $(seq 1200); do ls " +
      dir_.string() +
      " | grep -q best && break; sleep 0.05; done; kill -INT $pid; sleep 0.05; "
      "kill -TERM $pid; wait $pid; echo rc=$?";
  const std::string out = run_shell(script);
  // 143: the second signal ended it; 130: the first one's stop finished in between.
  EXPECT_TRUE(out.find("rc=143") != std::string::npos || out.find("rc=130") != std::string::npos)
      << out;
  EXPECT_TRUE(files_with(".best.").empty()) << listing();
  EXPECT_TRUE(files_with(".tmp.").empty()) << listing();
}

// A signal while the replicas of a model of GBs are allocated (amazon-670k's 670,091 labels at
// --hidden=128: 2.3 GB) abandons the allocation: exit 130, "interrupted", no model, no
// scratch. Without the handler a background job of `sh` would ignore SIGINT and train on
// (timeout's SIGKILL then gives 137); how soon it ends is not timed here (a loaded machine
// would make that a benchmark), the 60 s kill only bounds a hang. `--foreground`: timeout passes
// the signal to the command once (without it, to its process group as well, and the second delivery
// is a second signal).
TEST_F(CliScratch, ASignalDuringTheAllocationOfALargeModelAbandonsIt) {
  // train prints its memory estimate, compare its title, just before the allocation.
  struct Case {
    std::string args;
    const char* ready;
  };
  for (const Case& c :
       {Case{"train --synthetic=amazon-670k --scale=0.002 --hidden=128 --epochs=100000 -o " +
                 tmp("m.model"),
             "memory estimate"},
        Case{"compare --synthetic=amazon-670k --scale=0.002 --hidden=128 --devices=cpu "
             "--algos=adaptive,sync --time-budget=600 --no-plot -o " +
                 tmp("cmp"),
             "hetsgd compare:"}}) {
    const std::string log = tmp("log");
    const std::string script =
        "timeout --foreground -s KILL 60 " + std::string(HETSGD_CLI) + " " + c.args + " > " + log +
        " 2>&1 & pid=$!; for i in $(seq 1200); do grep -q \"" + c.ready + "\" " + log +
        " && break; sleep 0.02; done; kill -INT $pid; wait $pid; echo rc=$?";
    const std::string out = run_shell(script);
    const std::string text = hetsgd::test::read_file_bytes(log);
    if (text.find("but only") != std::string::npos && text.find("available") != std::string::npos) {
      GTEST_SKIP() << "not enough memory here for a 2.3 GB model: " << text;
    }
    ASSERT_NE(out.find("rc=130"), std::string::npos) << c.args << "\n" << out << text;
    // train allocates right after its estimate; compare may see the stop before it starts.
    if (c.ready == std::string("memory estimate")) {
      EXPECT_NE(text.find("interrupted"), std::string::npos) << c.args << "\n" << text;
    }
    EXPECT_FALSE(fs::exists(tmp("m.model"))) << listing();
    EXPECT_TRUE(files_with(".best.").empty()) << listing();
  }
  for (const auto& e : fs::directory_iterator(dir_ / "cmp")) {
    EXPECT_EQ(e.path().filename().string().find(".best."), std::string::npos) << e.path();
  }
}

}  // namespace
