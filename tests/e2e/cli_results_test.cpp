// What the command line reports is what it did: the JSON describes the saved model, a target
// without validation data is reported but never stops a run, and data formats are announced,
// forced with --format, or refused as ambiguous.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/engine/train_options.h"
#include "tests/common/cli_json.h"
#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using hetsgd::test::CliRun;
using hetsgd::test::record_of;

CliRun run(const std::string& args) { return hetsgd::test::run_cli(args); }

class CliResults : public hetsgd::test::ScratchTest {
 protected:
  CliResults() : ScratchTest("hetsgd_cli_results_") {}
  // A small bibtex-shaped pair in XC format: PREFIX_train.txt, PREFIX_test.txt.
  void generate() {
    const CliRun g = run("data gen --preset=bibtex --scale=0.05 -o " + tmp("d"));
    ASSERT_EQ(g.code, 0) << g.out;
  }
};

// With --no-keep-best the saved model is the last one: p1, val and selected_round must be
// its numbers, and `eval` of the file agrees with the reported test metrics, PSP@k included.
TEST_F(CliResults, NoKeepBestReportsTheModelItSaves) {
  generate();
  const std::string train = tmp("d_train.txt"), test = tmp("d_test.txt");
  for (const std::string keep : {"--no-keep-best", "--keep-best"}) {
    const std::string m = tmp("m.model");
    // A high rate and many evaluations make the last evaluation differ from the best.
    const CliRun t = run("train --train=" + train + " --test=" + test + " " + keep +
                         " --epochs=4 --lr=0.02 --eval-every=1 --hidden=16 --threads=1 -q "
                         "--json -o " +
                         m);
    ASSERT_EQ(t.code, 0) << t.out;
    const nlohmann::json j = record_of(t.out);
    ASSERT_TRUE(j.contains("val")) << t.out;
    const CliRun e =
        run("eval -m " + m + " -d " + test + " --train=" + train + " --threads=1 --json");
    ASSERT_EQ(e.code, 0) << e.out;
    const nlohmann::json ej = record_of(e.out);
    EXPECT_NEAR(j["p1"].get<double>(), ej["p1"].get<double>(), 1e-9) << keep << "\n" << t.out;
    EXPECT_NEAR(j["p5"].get<double>(), ej["p5"].get<double>(), 1e-9) << keep;
    // Propensities count the whole training file in both, the rows train held out for
    // validation included (pyxclib's way), so PSP@k agrees too.
    EXPECT_NEAR(j["psp1"].get<double>(), ej["psp1"].get<double>(), 1e-9) << keep;
    EXPECT_NEAR(j["psp5"].get<double>(), ej["psp5"].get<double>(), 1e-9) << keep;
    if (keep == "--no-keep-best") {
      EXPECT_EQ(j["selected_round"], j["rounds"]) << t.out;
    }
  }
}

TEST_F(CliResults, ATargetWithoutValidationIsReportedNeverActedOn) {
  generate();
  const CliRun t = run("train --train=" + tmp("d_train.txt") +
                       " --val-fraction=0 --target-p1=0.001 --epochs=2 --hidden=8 --json");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("without validation data"), std::string::npos) << t.out;
  const nlohmann::json j = record_of(t.out);
  EXPECT_EQ(j["stop"], "max epochs") << t.out;
  EXPECT_GE(j["time_to_target_s"].get<double>(), 0.0);
  // With validation data the same target stops the run.
  const CliRun v = run("train --train=" + tmp("d_train.txt") +
                       " --target-p1=0.001 --epochs=2 --hidden=8 --json -q");
  ASSERT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(record_of(v.out)["stop"], "target reached") << v.out;
}

// A query file cut out of an XC file without its header fits both readings of the model's
// feature space: an error saying how to resolve it, and --format=xc reads it right.
TEST_F(CliResults, AHeaderlessXcFileIsAmbiguousUntilFormatSaysWhich) {
  generate();
  const std::string train = tmp("d_train.txt");
  std::ifstream in(tmp("d_test.txt"));
  std::string header, line;
  std::getline(in, header);
  std::ofstream bare(tmp("bare.txt"));
  for (int i = 0; i < 20 && std::getline(in, line); ++i) bare << line << '\n';
  bare.close();
  const CliRun amb =
      run("train --train=" + train + " --test=" + tmp("bare.txt") + " --epochs=1 --hidden=8 -q");
  EXPECT_EQ(amb.code, 1) << amb.out;
  EXPECT_NE(amb.out.find("bare.txt"), std::string::npos) << amb.out;
  EXPECT_NE(amb.out.find("--format=libsvm or --format=xc"), std::string::npos) << amb.out;
  const CliRun ok = run("train --train=" + train + " --test=" + tmp("bare.txt") +
                        " --format=xc --epochs=1 --hidden=8");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("bare.txt: read as XC lines without a header line"), std::string::npos)
      << ok.out;
  // A header-less training file is read as LIBSVM, announced even under -q.
  const CliRun guess = run("train --train=" + tmp("bare.txt") + " --epochs=1 --hidden=8 -q");
  EXPECT_EQ(guess.code, 0) << guess.out;
  EXPECT_NE(guess.out.find("read as LIBSVM"), std::string::npos) << guess.out;
  EXPECT_NE(run("train --format=csv --epochs=1").code, 0);
}

// A LIBSVM --val file takes the training set's id spaces, as a --test file does.
TEST_F(CliResults, ALibsvmValidationFileTakesTheTrainingLabelSpace) {
  const std::string train = tmp("train.svm");
  std::ofstream(train) << "0 1:1 3:1\n1,2 2:1\n2 4:1 6:0.5\n0 5:1\n1 2:1 6:1\n";
  const std::string val = tmp("val.svm");
  std::ofstream(val) << "0 1:1\n1 2:1\n";
  const CliRun r = run("train --train=" + train + " --val=" + val + " --test=" + val +
                       " --hidden=4 --epochs=1 -q");
  EXPECT_EQ(r.code, 0) << r.out;
}

// Progress lines fit $COLUMNS, start with "loss -" before any step, name the split of each
// P@1 and show the elapsed time with an ETA and samples/s.
TEST_F(CliResults, ProgressFitsTheTerminalAndNamesItsSplits) {
  const std::string cmd =
      "train --synthetic=bibtex --scale=0.1 --epochs=2 --hidden=8 --eval-at-start";
  // Narrow: fields are left off whole, P@1 last.
  const CliRun narrow = hetsgd::test::run_cli(cmd, "COLUMNS=40");
  ASSERT_EQ(narrow.code, 0) << narrow.out;
  std::istringstream narrow_lines(narrow.out);
  std::string line;
  while (std::getline(narrow_lines, line)) {
    if (line.rfind("epoch ", 0) == 0) {
      EXPECT_LE(line.size(), 40u) << line;
    }
  }
  const CliRun r = hetsgd::test::run_cli(cmd, "COLUMNS=80");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  int progress = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("epoch ", 0) != 0) continue;
    EXPECT_LE(line.size(), 80u) << line;
    // The first line is the untrained model's: no step, no loss, no rate to extrapolate.
    const std::string expected = progress == 0 ? "loss -" : " eta ";
    EXPECT_NE(line.find(expected), std::string::npos) << line;
    EXPECT_NE(line.find("/s"), std::string::npos) << line;
    EXPECT_NE(line.find("val P@1"), std::string::npos) << line;
    ++progress;
  }
  EXPECT_GE(progress, 2) << r.out;
  // Without --test the metrics are on the training set, and the line says so.
  const CliRun t = run("data gen --preset=tiny -o " + tmp("t"));
  ASSERT_EQ(t.code, 0) << t.out;
  const CliRun own = hetsgd::test::run_cli(
      "train --train=" + tmp("t_train.txt") + " --epochs=1 --hidden=8 --val-fraction=0",
      "COLUMNS=80");
  EXPECT_NE(own.out.find("train P@1"), std::string::npos) << own.out;
  // The total is the schedule the run follows: a shortlisted layer's auto epochs, not the
  // full layer's default; with validation data to stop it, raised to kAutoMinSamples' worth
  // of the 461 training rows left beside the 51 held out.
  const std::string shortlisted =
      "train --train=" + tmp("t_train.txt") + " --hidden=8 --output-layer=shortlist --forest=off";
  const CliRun sl = hetsgd::test::run_cli(shortlisted + " --val-fraction=0", "COLUMNS=80");
  ASSERT_EQ(sl.code, 0) << sl.out;
  // 8 passes of the decay's clock, whose unit on 512 rows is its floor of 4,096 points.
  char passes[32];
  std::snprintf(passes, sizeof(passes), "epoch %.2f/%.0f ", 8.0 * 4096 / 512, 8.0 * 4096 / 512);
  EXPECT_NE(sl.out.find(passes), std::string::npos) << passes << "\n" << sl.out;
  EXPECT_EQ(hetsgd::TrainOptions{}.decay_min_points, 4096);
  const CliRun val = hetsgd::test::run_cli(shortlisted, "COLUMNS=80");
  ASSERT_EQ(val.code, 0) << val.out;
  char total[32];
  std::snprintf(total, sizeof(total), "/%.2f ", hetsgd::kAutoMinSamples / 461.0);
  EXPECT_NE(val.out.find(total), std::string::npos) << total << "\n" << val.out;
  EXPECT_NE(val.out.find("stopped by no improvement"), std::string::npos) << val.out;
}

// A negatable flag shows its real default.
TEST_F(CliResults, HelpShowsNegatableFlagsWithTheirDefault) {
  const CliRun h = run("train --help");
  EXPECT_NE(h.out.find("--[no-]keep-best=on"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("--no-keep-best{false}"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("amazon-3m"), std::string::npos);  // every preset is listed
}

// One name for the output across the subcommands that write one; the footnotes of the
// comparison table wrap at words to $COLUMNS.
TEST_F(CliResults, OutputIsDashOEverywhereAndFootnotesWrap) {
  for (const char* sub : {"train", "compare", "share", "predict", "data gen", "data convert"}) {
    const CliRun h = run(std::string(sub) + " --help");
    EXPECT_NE(h.out.find("-o,--output"), std::string::npos) << sub << "\n" << h.out;
  }
  const CliRun c = hetsgd::test::run_cli(
      "compare --synthetic=tiny --algos=adaptive,sync --time-budget=0.2 --target-p1=0.05 "
      "--hidden=8 --no-plot -q -o " +
          tmp("cmp"),
      "COLUMNS=80");
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_TRUE(fs::exists(tmp("cmp") + "/summary.json"));
  std::istringstream lines(c.out);
  std::string line;
  int notes = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("(", 0) != 0 && line.rfind(" ", 0) != 0) continue;
    // A single word longer than the width (a long path) stands alone on its line.
    const std::size_t text = line.find_first_not_of(' ');
    if (line.find(' ', text) == std::string::npos) continue;
    EXPECT_LE(line.size(), 80u) << line;
    ++notes;
  }
  EXPECT_GE(notes, 4) << c.out;  // two footnotes, wrapped
}

}  // namespace
