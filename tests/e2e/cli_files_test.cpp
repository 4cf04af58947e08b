// The command line against bad files and bad outputs: every case of tests/data/bad exits 1
// naming the file; special files are refused by name; results written to a full disk or a
// FIFO-blocked path never end in exit 0 or a truncated file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/cli_run.h"
#include "tests/common/paths.h"
#include "tests/common/scratch_dir.h"

namespace {

namespace fs = std::filesystem;

using hetsgd::test::CliRun;

// Runs `hetsgd ARGS` through the shell; `prefix` goes before it (ulimit, trap).
CliRun run(const std::string& args, const std::string& prefix = "") {
  return hetsgd::test::run_cli(args, prefix);
}

using hetsgd::test::read_file_bytes;

class CliFiles : public hetsgd::test::ScratchTest {
 protected:
  CliFiles() : ScratchTest("hetsgd_cli_files_") {}
  // A small model trained on good/tiny_xc.txt.
  std::string model() {
    const std::string m = tmp("tiny.model");
    const CliRun r = run("train --train=" + good() + " --hidden=4 --epochs=1 -q -o " + m);
    EXPECT_EQ(r.code, 0) << r.out;
    return m;
  }
  static std::string good() { return hetsgd::test::data_path("good/tiny_xc.txt"); }
};

// Keep-best (on by default, with the default validation split) keeps its copy of the best
// model in a scratch file beside the output while the run trains; afterwards only the model
// is left.
TEST_F(CliFiles, KeepBestLeavesOnlyTheModelFile) {
  const std::string m = tmp("kb.model");
  const CliRun r = run("train --synthetic=bibtex --scale=0.05 --epochs=2 --hidden=8 -q -o " + m);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("selected model"), std::string::npos) << r.out;  // keep-best was on
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir_)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"kb.model"});
}

TEST_F(CliFiles, EveryBadCorpusCaseExitsOneNamingFileAndMessage) {
  const std::string m = model();
  int cases = 0;
  for (const hetsgd::test::BadCorpusCase& c : hetsgd::test::bad_corpus_cases()) {
    const std::string path = hetsgd::test::data_path("bad/" + c.file);
    const CliRun r =
        c.reader == "model" ? run("eval -m " + path + " -d " + good()) : run("data stats " + path);
    ++cases;
    EXPECT_EQ(r.code, 1) << c.file << ": " << r.out;
    EXPECT_NE(r.out.find(c.file), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.pieces[0]), std::string::npos) << c.file << ": " << r.out;
    EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("std::"), std::string::npos) << r.out;
  }
  EXPECT_GE(cases, 60);
}

TEST_F(CliFiles, SpecialFilesAreRefusedByNameWithoutBlocking) {
  const std::string fifo = tmp("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string m = model();
  // Nothing writes to the FIFO: opening it for reading would block forever.
  for (const std::string& args : std::vector<std::string>{
           "data stats " + fifo, "eval -m " + fifo + " -d " + good(),
           "eval -m " + m + " -d " + fifo, "train --train=" + fifo + " --epochs=1 -q",
           "data stats /dev/zero", "data stats /tmp"}) {
    const CliRun r = run(args, "timeout 20");
    EXPECT_EQ(r.code, 1) << args << ": " << r.out;
    EXPECT_NE(r.out.find("is not a regular file"), std::string::npos) << args << ": " << r.out;
  }
}

TEST_F(CliFiles, ResultsToAFullStdoutAreExitOne) {
  const std::string m = model();
  std::ofstream(tmp("jobs.json")) << R"({"device_types": [{"name": "cpu", "devices": ["cpu:0"]}],
             "tenants": [{"name": "a", "job": {"data": "synthetic:bibtex"}}],
             "throughput": [[100]]})";
  for (const std::string& args : std::vector<std::string>{
           "share --json --jobs=" + tmp("jobs.json") + " --out=" + tmp("share"),
           "data stats " + good(), "eval -m " + m + " -d " + good(),
           "eval --json -m " + m + " -d " + good(), "predict -m " + m + " -d " + good(),
           "train --json --train=" + good() + " --hidden=4 --epochs=1 --forest=off",
           "compare --json --train=" + good() +
               " --hidden=4 --epochs=1 --no-plot --algos=sync "
               "--devices=cpu --out=" +
               tmp("cmp")}) {
    // No chart is drawn (HETSGD_TOOLS_DIR): the test is about stdout.
    const std::string cmd = "HETSGD_TOOLS_DIR=/nonexistent " + std::string(HETSGD_CLI) + " " +
                            args + " > /dev/full 2>" + tmp("err");
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1) << args;
    EXPECT_NE(read_file_bytes(tmp("err")).find("stdout: write failed"), std::string::npos) << args;
  }
}

TEST_F(CliFiles, CompareOutOntoAFileIsExitOneNamingIt) {
  std::ofstream(tmp("plain")) << "x\n";
  const CliRun r = run("compare --train=" + good() +
                       " --hidden=4 --algos=sync --devices=cpu "
                       "--no-plot --out=" +
                       tmp("plain"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--out '" + tmp("plain") + "': cannot create the output folder"),
            std::string::npos)
      << r.out;
}

TEST_F(CliFiles, OutputsAreCheckedBeforeWorkAndNeverReplaceSpecialFiles) {
  const std::string m = model();
  const CliRun missing = run("predict -m " + m + " -d " + good() + " -o " + tmp("no/such/p.txt"));
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
  const CliRun dev = run("predict -m " + m + " -d " + good() + " -o /dev/null");
  EXPECT_EQ(dev.code, 1) << dev.out;
  EXPECT_NE(dev.out.find("not a regular file"), std::string::npos) << dev.out;
  const CliRun dir = run("data convert " + good() + " " + dir_.string());
  EXPECT_EQ(dir.code, 1) << dir.out;
  const CliRun gen = run("data gen --preset=bibtex --scale=0.01 -o " + tmp("none/x"));
  EXPECT_EQ(gen.code, 1) << gen.out;
  EXPECT_NE(gen.out.find("none"), std::string::npos) << gen.out;
}

TEST_F(CliFiles, AFullDiskKeepsThePreviousFileAndExitsOne) {
  const std::string m = model();
  const std::string out = tmp("pred.txt");
  std::ofstream(out) << "previous\n";
  // Real data so the output exceeds the 1-block file size limit (ulimit -f counts 512 bytes);
  // SIGXFSZ is ignored so the write fails with EFBIG, as on a full disk.
  const std::string gen = tmp("g");
  ASSERT_EQ(run("data gen --preset=bibtex --scale=0.05 -o " + gen).code, 0);
  const std::string bm = tmp("b.model");
  ASSERT_EQ(run("train --train=" + gen + "_train.txt --hidden=4 --epochs=1 -q -o " + bm).code, 0);
  const CliRun r =
      run("predict -m " + bm + " -d " + gen + "_test.txt -o " + out, "trap '' XFSZ; ulimit -f 1;");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(out), std::string::npos) << r.out;
  EXPECT_EQ(read_file_bytes(out), "previous\n");
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(CliFiles, StaleTempFilesOfAKilledWriterAreRemoved) {
  const std::string out = tmp("c.bin");
  // A pid far above pid_max is never running: its writer is gone.
  const std::string stale = out + ".tmp.999999999";
  std::ofstream(stale) << "half a cache";
  const std::string live = out + ".tmp." + std::to_string(::getpid());  // this test: running
  std::ofstream(live) << "in progress";
  ASSERT_EQ(run("data convert " + good() + " " + out).code, 0);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(out));
}

TEST_F(CliFiles, AHugeDeclaredLabelSpaceIsNotAllocatedByStats) {
  const std::string f = tmp("wide.txt");
  std::ofstream(f) << "3 10 2147483647\n0 1:1\n2147483646 2:1\n5,9 3:1\n";
  // A 4 GB address-space limit makes a per-label table (16 GiB) fail; ASan reserves more than
  // that for its shadow memory, so there the test relies on the time and memory it takes.
#if defined(__SANITIZE_ADDRESS__)
  const char* limit = "";
#else
  const char* limit = "ulimit -v 4000000;";
#endif
  const CliRun r = run("data stats " + f, limit);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2147483647"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("labels_used:             4"), std::string::npos) << r.out;
}

// Training counts every declared label (its propensities): a header declaring 2^31 - 1 labels
// over three rows is refused naming that count, never a bare std::bad_alloc.
TEST_F(CliFiles, AHugeDeclaredLabelSpaceIsRefusedByTrainNamingIt) {
  const std::string f = tmp("wide.txt");
  std::ofstream(f) << "3 10 2147483647\n0 1:1\n2147483646 2:1\n5,9 3:1\n";
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit = "HETSGD_MEMORY_LIMIT=4G";
#else
  const std::string limit = "ulimit -v 4000000;";
#endif
  for (const std::string& cmd :
       {"train --train=" + f + " --hidden=4 --epochs=1 -q -o " + tmp("m.model"),
        "compare --train=" + f +
            " --hidden=4 --epochs=1 --no-plot "
            "--algos=sync --devices=cpu --out=" +
            tmp("cmp")}) {
    const CliRun r = run(cmd, limit);
    EXPECT_EQ(r.code, 1) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("counting the labels of '" + f + "' (num_labels 2147483647)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("bad_alloc"), std::string::npos) << r.out;
  }
}

TEST_F(CliFiles, ALibsvmTestSetTakesTheLabelCountOfTheModel) {
  // A LIBSVM test set whose highest label (2 of 3) is absent: read at the model's width.
  const std::string train = tmp("train.svm");
  std::ofstream(train) << "0 1:1 3:1\n1,2 2:1\n2 4:1 6:0.5\n0 5:1\n";
  const std::string test = tmp("test.svm");
  std::ofstream(test) << "0 1:1\n1 2:1\n";
  const std::string m = tmp("svm.model");
  ASSERT_EQ(run("train --train=" + train + " --hidden=4 --epochs=1 -q -o " + m).code, 0);
  // Against a model the header-less file fits 1-based and 0-based ids: --format says which.
  const CliRun amb = run("eval -m " + m + " -d " + test);
  EXPECT_EQ(amb.code, 1) << amb.out;
  EXPECT_NE(amb.out.find("--format=libsvm or --format=xc"), std::string::npos) << amb.out;
  const CliRun r = run("eval --format=libsvm -m " + m + " -d " + test);
  EXPECT_EQ(r.code, 0) << r.out;
  const CliRun t = run("train --train=" + train + " --test=" + test + " --hidden=4 --epochs=1 -q");
  EXPECT_EQ(t.code, 0) << t.out;
  std::ofstream(tmp("bad.svm")) << "0 1:1\n7 2:1\n";
  const CliRun b = run("eval --format=libsvm -m " + m + " -d " + tmp("bad.svm"));
  EXPECT_EQ(b.code, 1) << b.out;
  EXPECT_NE(b.out.find("bad.svm:2: label id 7 >= num_labels 3"), std::string::npos) << b.out;
}

// The .npz options of `data convert` are refused where they would be ignored or would make
// the labels overwrite the features: a usage error (exit 2) naming the option, nothing written.
TEST_F(CliFiles, NpzOptionsThatWouldBeIgnoredOrOverwriteAreUsageErrors) {
  const std::string x = tmp("x.npz"), y = tmp("y.npz");
  for (const std::string& args : std::vector<std::string>{
           good() + " " + tmp("x.bin") + " --labels-output=" + y,
           good() + " " + tmp("x.txt") + " --format=xc --uncompressed",
           good() + " " + x + " --format=npz --labels-output=" + x,
           good() + " " + x + " --format=npz --labels-output=" + dir_.string() + "/./x.npz",
           good() + " " + x + " --format=npz", good() + " " + tmp("x.bin") + " --labels=" + y}) {
    const CliRun r = run("data convert " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_TRUE(r.out.find("--labels-output") != std::string::npos ||
                r.out.find("--uncompressed") != std::string::npos ||
                r.out.find("--labels") != std::string::npos)
        << args << ": " << r.out;
    EXPECT_TRUE(fs::is_empty(dir_)) << args;
  }
  const CliRun same =
      run("data convert " + good() + " " + x + " --format=npz --labels-output=" + x);
  EXPECT_NE(same.out.find("overwrite the features"), std::string::npos) << same.out;
  const CliRun ignored =
      run("data convert " + good() + " " + tmp("x.bin") + " --labels-output=" + y);
  EXPECT_NE(ignored.out.find("only --format=npz writes a labels file"), std::string::npos)
      << ignored.out;
  // The combination that is meant: both files written, and read back to the same shape.
  const CliRun ok =
      run("data convert --json " + good() + " " + x + " --format=npz --labels-output=" + y);
  ASSERT_EQ(ok.code, 0) << ok.out;
  const CliRun back =
      run("data convert --json " + x + " --labels=" + y + " " + tmp("back.txt") + " --format=xc");
  ASSERT_EQ(back.code, 0) << back.out;
  ASSERT_EQ(run("data convert " + good() + " " + tmp("direct.txt") + " --format=xc").code, 0);
  EXPECT_EQ(read_file_bytes(tmp("back.txt")), read_file_bytes(tmp("direct.txt")));
}

// Names in the test folder that start with "hetsgd-stdin.": the copies of standard input.
std::vector<std::string> stdin_copies(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hetsgd-stdin.", 0) == 0) out.push_back(name);
  }
  return out;
}

// `-d -`: errors name <stdin>, never the private copy, and the copy is gone after every exit:
// a parse error, a memory refusal, a model mismatch, SIGINT while standard input is open.
TEST_F(CliFiles, StdinErrorsSayStdinAndLeaveNoTemporaryCopy) {
  const std::string m = model();
  const std::string env = "TMPDIR=" + dir_.string();
  std::ofstream(tmp("bad.txt")) << "2 6 3\n0 1:1\n9 2:1\n";
  const CliRun bad = run("predict -m " + m + " -d - < " + tmp("bad.txt"), env);
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("<stdin>:3: label id 9 >= num_labels 3"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("hetsgd-stdin"), std::string::npos) << bad.out;
  std::ofstream(tmp("wide.txt")) << "1 9 3\n0 8:1\n";
  const CliRun wide = run("eval -m " + m + " -d - < " + tmp("wide.txt"), env);
  EXPECT_EQ(wide.code, 1) << wide.out;
  EXPECT_NE(wide.out.find("<stdin>: 9 features but model"), std::string::npos) << wide.out;
  EXPECT_EQ(wide.out.find("hetsgd-stdin"), std::string::npos) << wide.out;
  // 4 MB of text refused by a 1 MiB budget before it is parsed.
  std::ofstream(tmp("long.txt")) << "2 6 3\n0 1:1\n1 2:1\n" << std::string(2000000, '\n');
  const CliRun mem =
      run("predict -m " + m + " -d - < " + tmp("long.txt"), env + " HETSGD_MEMORY_LIMIT=1M");
  EXPECT_EQ(mem.code, 1) << mem.out;
  EXPECT_NE(mem.out.find("parsing '<stdin>'"), std::string::npos) << mem.out;
  EXPECT_TRUE(stdin_copies(dir_).empty());
  // SIGINT while the command waits for more input on a FIFO whose writer is open.
  const std::string fifo = tmp("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string script =
      env + " " + HETSGD_CLI + " predict -m " + m + " -d - < " + fifo + " > " + tmp("log") +
      " 2>&1 & pid=$!; exec 3> " + fifo +
      "; printf \"1 6 3\\n\" >&3; for i in $(seq 1200); do ls " + dir_.string() +
      " | grep -q hetsgd-stdin && break; sleep 0.05; done; ls " + dir_.string() +
      " | grep -c hetsgd-stdin; kill -INT $pid; wait $pid; "
      "echo rc=$?; exec 3>&-";
  const std::string out = hetsgd::test::run_shell(script);
  EXPECT_NE(out.find("1\nrc=130"), std::string::npos) << out << read_file_bytes(tmp("log"));
  EXPECT_TRUE(stdin_copies(dir_).empty());
}

// A TMPDIR that is missing or not a directory is named with the reason; exit 1.
TEST_F(CliFiles, AnUnusableTmpdirIsNamed) {
  const std::string m = model();
  std::ofstream(tmp("file")) << "x";
  for (const auto& [dir, why] : std::vector<std::pair<std::string, std::string>>{
           {tmp("none"), "No such file or directory"}, {tmp("file"), "not a directory"}}) {
    const CliRun p = run("predict -m " + m + " -d - < " + good(), "TMPDIR=" + dir);
    EXPECT_EQ(p.code, 1) << p.out;
    EXPECT_NE(p.out.find("TMPDIR=" + dir + ": " + why), std::string::npos) << p.out;
    EXPECT_EQ(p.out.find("filesystem error"), std::string::npos) << p.out;
    const CliRun t = run("train --train=" + good() + " --hidden=4 --epochs=1 -q", "TMPDIR=" + dir);
    EXPECT_EQ(t.code, 1) << t.out;
    EXPECT_NE(t.out.find("TMPDIR=" + dir + ": " + why), std::string::npos) << t.out;
    // Beside -o the keep-best scratch needs no temporary folder.
    const CliRun o =
        run("train --train=" + good() + " --hidden=4 --epochs=1 -q -o " + tmp("o.model"),
            "TMPDIR=" + dir);
    EXPECT_EQ(o.code, 0) << o.out;
  }
}

}  // namespace
