// One command-line language: the same concept has the same option name on every subcommand
// (--devices, -o/--output, --data-seed), every subcommand that prints takes -q and --json, and
// --config is read before or after the subcommand.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using hetsgd::test::CliRun;
using hetsgd::test::run_cli;

class CliLanguage : public hetsgd::test::ScratchTest {
 protected:
  CliLanguage() : ScratchTest("hetsgd_lang_") {}
  /// A small synthetic pair and a model trained on it (one epoch).
  void make_model() {
    ASSERT_EQ(run_cli("data gen --preset=bibtex --scale=0.05 -o " + tmp("d")).code, 0);
    const CliRun t =
        run_cli("train --train=" + tmp("d_train.txt") + " --test=" + tmp("d_test.txt") +
                " --epochs=1 -q -o " + tmp("m.model"));
    ASSERT_EQ(t.code, 0) << t.out;
  }
};

TEST_F(CliLanguage, EverySubcommandThatPrintsTakesQuietAndJson) {
  for (const char* sub : {"train", "compare", "share", "eval", "predict", "data gen",
                          "data convert", "data stats", "devices"}) {
    const CliRun h = run_cli(std::string(sub) + " --help");
    ASSERT_EQ(h.code, 0) << sub << ": " << h.out;
    EXPECT_NE(h.out.find("-q,--quiet"), std::string::npos) << sub << ": " << h.out;
    EXPECT_NE(h.out.find("--json"), std::string::npos) << sub << ": " << h.out;
  }
  // And they work: devices prints one JSON record.
  const CliRun d = run_cli("devices --json -q");
  ASSERT_EQ(d.code, 0) << d.out;
  EXPECT_EQ(d.out.rfind("{\"auto\":", 0), 0u) << d.out;
}

TEST_F(CliLanguage, EvalAndPredictTakeDevicesLikeEveryOtherSubcommand) {
  make_model();
  for (const char* sub : {"eval", "predict"}) {
    const CliRun h = run_cli(std::string(sub) + " --help");
    EXPECT_NE(h.out.find("--devices"), std::string::npos) << h.out;
    // The former name still works but is no longer documented.
    EXPECT_EQ(h.out.find("--device "), std::string::npos) << h.out;
    EXPECT_EQ(h.out.find("--device,"), std::string::npos) << h.out;
  }
  const std::string base = " -m " + tmp("m.model") + " -d " + tmp("d_test.txt");
  const CliRun now = run_cli("eval" + base + " --devices=cpu:0 --json -q");
  ASSERT_EQ(now.code, 0) << now.out;
  const CliRun former = run_cli("eval" + base + " --device=cpu:0 --json -q");
  ASSERT_EQ(former.code, 0) << former.out;
  EXPECT_EQ(now.out, former.out);
  const CliRun two = run_cli("predict" + base + " --devices=cpu:0,cpu:1");
  EXPECT_EQ(two.code, 1) << two.out;
  EXPECT_NE(two.out.find("--devices 'cpu:0,cpu:1'"), std::string::npos) << two.out;
  // -q silences the notice naming the model, the device and the rows; results stay.
  const CliRun loud = run_cli("eval" + base);
  ASSERT_EQ(loud.code, 0) << loud.out;
  EXPECT_NE(loud.out.find("hetsgd: " + tmp("m.model") + " ("), std::string::npos) << loud.out;
  const CliRun quiet = run_cli("eval" + base + " -q");
  EXPECT_EQ(quiet.out.find("hetsgd: " + tmp("m.model")), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("P@1="), std::string::npos) << quiet.out;
}

TEST_F(CliLanguage, PredictJsonWritesOneRecordPerRow) {
  make_model();
  const std::string base = " -m " + tmp("m.model") + " -d " + tmp("d_test.txt");
  const CliRun j = run_cli("predict" + base + " -k 3 --json -q");
  ASSERT_EQ(j.code, 0) << j.out;
  std::istringstream lines(j.out);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.rfind("{\"labels\":[", 0), 0u) << line;
    EXPECT_NE(line.find("\"row\":" + std::to_string(rows) + ","), std::string::npos) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 126);
  const CliRun clash = run_cli("predict" + base + " --json --output-format=xc");
  EXPECT_EQ(clash.code, 1) << clash.out;
  EXPECT_NE(clash.out.find("--output-format=xc"), std::string::npos) << clash.out;
}

TEST_F(CliLanguage, TheGeneratorSeedIsDataSeedAndTheOutputIsOutputEverywhere) {
  const CliRun h = run_cli("data gen --help");
  EXPECT_NE(h.out.find("--data-seed"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("-o,--output"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("--seed"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("--out "), std::string::npos) << h.out;
  ASSERT_EQ(
      run_cli("data gen --preset=bibtex --scale=0.05 --data-seed=3 --output " + tmp("a")).code, 0);
  // The former names still work and mean the same.
  ASSERT_EQ(run_cli("data gen --preset=bibtex --scale=0.05 --seed=3 --out " + tmp("b")).code, 0);
  EXPECT_EQ(hetsgd::test::read_file_bytes(tmp("a_train.txt")),
            hetsgd::test::read_file_bytes(tmp("b_train.txt")));
  ASSERT_EQ(run_cli("data gen --preset=bibtex --scale=0.05 --data-seed=4 -o " + tmp("c")).code, 0);
  EXPECT_NE(hetsgd::test::read_file_bytes(tmp("a_train.txt")),
            hetsgd::test::read_file_bytes(tmp("c_train.txt")));
  // train --synthetic with the same --data-seed trains on the same generator's data.
  const CliRun t =
      run_cli("train --synthetic=bibtex --scale=0.05 --data-seed=3 --epochs=1 --json -q");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("seed 3, 244 train"), std::string::npos) << t.out;
  // data convert takes its output as -o too (or as the second positional, as before).
  const CliRun conv = run_cli("data convert " + tmp("a_test.txt") + " -o " + tmp("a.bin"));
  ASSERT_EQ(conv.code, 0) << conv.out;
  EXPECT_TRUE(fs::exists(tmp("a.bin")));
  const CliRun none = run_cli("data convert " + tmp("a_test.txt"));
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("-o,--output"), std::string::npos) << none.out;
  const CliRun bad = run_cli("data gen --data-seed=-1 -o " + tmp("x"));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--data-seed"), std::string::npos) << bad.out;
}

TEST_F(CliLanguage, ConfigIsReadBeforeOrAfterTheSubcommand) {
  const std::string cfg = tmp("c.toml");
  std::ofstream(cfg) << "[train]\nepochs = 1\nbatch_policy = fixed\n";
  for (const std::string& args :
       {"--config=" + cfg + " train --synthetic=bibtex --scale=0.05 --json -q",
        "train --synthetic=bibtex --scale=0.05 --json -q --config=" + cfg}) {
    const CliRun r = run_cli(args);
    ASSERT_EQ(r.code, 0) << args << ": " << r.out;
    EXPECT_NE(r.out.find("\"epochs\":1.0"), std::string::npos) << args << ": " << r.out;
  }
  std::ofstream(cfg) << "[train]\nepochs = 1\nbogus = 2\n";
  const CliRun bad = run_cli("train --synthetic=bibtex --scale=0.05 --config " + cfg);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find(cfg + ":3: unknown option 'bogus'"), std::string::npos) << bad.out;
}

// compare's summary (table, notes, footnotes, file lines) fits $COLUMNS: a table wider than
// the terminal is cut into blocks of whole columns, each starting with the algorithm.
TEST_F(CliLanguage, CompareSummaryFitsTheTerminal) {
  const std::string args =
      "compare --synthetic=bibtex --scale=0.2 --algos=adaptive,sync --time-budget=0.3 "
      "--target-p1=0.05 --no-plot -q -o cmp";
  for (int columns : {50, 80, 200}) {
    const CliRun r =
        run_cli(args, "cd " + dir_.string() + " && COLUMNS=" + std::to_string(columns));
    ASSERT_EQ(r.code, 0) << r.out;
    std::istringstream lines(r.out);
    std::string line, header;
    int headers = 0;
    while (std::getline(lines, line)) {
      EXPECT_LE(static_cast<int>(line.size()), columns) << columns << ": '" << line << "'";
      if (line.rfind("algo ", 0) == 0) {
        ++headers;
        header += line;
      }
    }
    // Every column is printed once, whatever the width.
    for (const char* col : {"t@P1>=0.05", "P@1", "P@5", "nDCG@5", "test max", "samples/s", "epochs",
                            "updates per device", "final batch sizes"}) {
      EXPECT_NE(header.find(col), std::string::npos) << columns << ": " << col << r.out;
    }
    if (columns == 200) {
      EXPECT_EQ(headers, 1) << r.out;
    } else {
      EXPECT_GE(headers, 2) << r.out;
    }
    EXPECT_NE(r.out.find("(t@P1: training seconds"), std::string::npos) << r.out;
  }
}

}  // namespace
