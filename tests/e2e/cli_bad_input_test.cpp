// Inputs that were accepted with a surprising meaning or lost output: each is now refused
// naming the option or file (exit 2 for usage, 1 otherwise), or done as the user meant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/cli_run.h"
#include "tests/common/paths.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using hetsgd::test::CliRun;

CliRun run(const std::string& args) { return hetsgd::test::run_cli(args); }

class CliBadInputs : public hetsgd::test::ScratchTest {
 protected:
  CliBadInputs() : ScratchTest("hetsgd_cli_bad_") {}
  static std::string good() { return hetsgd::test::data_path("good/tiny_xc.txt"); }
};

TEST_F(CliBadInputs, CompareRefusesTrainOnlyOptionsWithAHint) {
  struct Case {
    const char* arg;
    const char* hint;
  };
  for (const Case& c :
       {Case{"--algo=sync", "--algos"}, Case{"--resume=x.ckpt", "train --resume"},
        Case{"--checkpoint=x.ckpt", "train --checkpoint"},
        Case{"--checkpoint-every=3", "not saved"}, Case{"--stop-at-target", "same budget"},
        Case{"--no-stop-at-target", "same budget"}}) {
    const CliRun r = run(std::string("compare ") + c.arg + " --time-budget=0.1");
    EXPECT_EQ(r.code, 2) << c.arg << ": " << r.out;
    const std::string flag = std::string(c.arg).substr(0, std::string(c.arg).find('='));
    EXPECT_NE(r.out.find(flag + ": not a compare option"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.hint), std::string::npos) << r.out;
  }
  EXPECT_EQ(run("compare --help").out.find("--checkpoint"), std::string::npos);
}

TEST_F(CliBadInputs, AConfigSectionOrKeyTwiceIsAnErrorAndConfigWorksAfterTheSubcommand) {
  std::ofstream(tmp("twice.ini")) << "[train]\nepochs = 1\n\n[train]\nhidden = 4\n";
  CliRun r = run("--config=" + tmp("twice.ini") + " train");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("twice.ini:4: section [train] again (first at line 1)"), std::string::npos)
      << r.out;
  std::ofstream(tmp("key.ini")) << "[train]\nepochs = 1\nepochs = 2\n";
  r = run("--config=" + tmp("key.ini") + " train");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("key.ini:3: 'epochs' again"), std::string::npos) << r.out;
  // After the subcommand, as every other option may be.
  std::ofstream(tmp("ok.ini")) << "[train]\nepochs = 1\nhidden = 4\n";
  r = run("train --train=" + good() + " -q --json --config=" + tmp("ok.ini"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"epochs\":1"), std::string::npos) << r.out;
}

TEST_F(CliBadInputs, OutputThroughASymlinkReplacesItsTargetAndKeepsTheLink) {
  std::ofstream(tmp("real.model")) << "old";
  fs::create_symlink("real.model", tmp("link.model"));
  const CliRun r =
      run("train --train=" + good() + " --hidden=4 --epochs=1 -q -o " + tmp("link.model"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(tmp("link.model")));
  EXPECT_GT(fs::file_size(tmp("real.model")), 3u);
  EXPECT_EQ(run("eval -m " + tmp("link.model") + " -d " + good()).code, 0);
}

TEST_F(CliBadInputs, KernelFilesAreReadNotReportedEmpty) {
  // /proc files report size 0; their content is read (and refused as data for what it is).
  const CliRun r = run("data stats /proc/self/status");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out.find("empty file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/proc/self/status:1:"), std::string::npos) << r.out;
}

TEST_F(CliBadInputs, ALogThatCannotBeWrittenIsExitOneNamingIt) {
  const CliRun r = run("train --train=" + good() + " --hidden=4 --epochs=1 -q --log=/dev/full");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--log '/dev/full'"), std::string::npos) << r.out;
}

TEST_F(CliBadInputs, AValidationFractionThatLeavesNoRowSaysSo) {
  std::ofstream(tmp("one.txt")) << "1 4 2\n0 1:1 3:1\n";
  const CliRun r = run("train --train=" + tmp("one.txt") + " --hidden=4 --epochs=1 -q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--val-fraction 0.1 leaves no validation row"), std::string::npos) << r.out;
}

}  // namespace
