// Checked inputs and outputs (core/file_io.h), the memory budget (core/memory_budget.h) and the
// model file's load-time checks (core/model/model_io.h).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>

#include "core/checksum.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/memory_budget.h"
#include "core/model/model_io.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd {
namespace {

namespace fs = std::filesystem;

using test::read_file_bytes;

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class FileIo : public hetsgd::test::ScratchTest {
 protected:
  FileIo() : ScratchTest("hetsgd_file_io_") {}
};

TEST_F(FileIo, SpecialInputsAreRefusedByNameBeforeOpening) {
  const std::string fifo = tmp("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // With no writer, an open() for reading would block: the check must come first.
  EXPECT_NE(
      message_of([&] { MappedFile f(fifo); }).find("'" + fifo + "' is not a regular file (a FIFO)"),
      std::string::npos);
  EXPECT_NE(message_of([&] { MappedFile f(dir_.string()); }).find("(a directory)"),
            std::string::npos);
  EXPECT_NE(message_of([] { MappedFile f("/dev/zero"); }).find("(a character device)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              read_text_file(fifo, 100, "jobs file");
            }).find("jobs file '" + fifo + "' is not a regular file"),
            std::string::npos);
  EXPECT_NE(message_of([&] { MappedFile f(tmp("absent")); }).find("No such file"),
            std::string::npos);
}

TEST_F(FileIo, TextInputsHaveASizeLimit) {
  std::ofstream(tmp("a.json")) << std::string(1000, 'x');
  EXPECT_EQ(read_text_file(tmp("a.json"), 1000).size(), 1000u);
  EXPECT_NE(message_of([&] {
              read_text_file(tmp("a.json"), 999, "config file");
            }).find("config file '" + tmp("a.json") + "' has 1000 bytes > limit 999"),
            std::string::npos);
}

TEST_F(FileIo, OutputPathsAreCheckedBeforeWork) {
  EXPECT_NO_THROW(check_output_path(tmp("new.txt")));
  std::ofstream(tmp("old.txt")) << "x";
  EXPECT_NO_THROW(check_output_path(tmp("old.txt")));
  EXPECT_NE(message_of([&] { check_output_path(tmp("no/such/x.txt"), "model output"); })
                .find("model output '" + tmp("no/such/x.txt") + "': folder '" + tmp("no/such") +
                      "' does not exist"),
            std::string::npos);
  EXPECT_NE(message_of([&] { check_output_path(tmp("old.txt/x")); }).find("is not a folder"),
            std::string::npos);
  EXPECT_NE(message_of([&] { check_output_path(dir_.string()); }).find("(a directory)"),
            std::string::npos);
  EXPECT_NE(message_of([] { check_output_path("/dev/null"); }).find("refusing to replace"),
            std::string::npos);
  EXPECT_NE(message_of([] { check_output_path(""); }).find("empty path"), std::string::npos);
}

TEST_F(FileIo, AtomicWriteNeverReplacesASpecialFile) {
  const std::string fifo = tmp("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(message_of([&] {
              write_file_atomic(fifo, std::string("x"));
            }).find("not a regular file (a FIFO)"),
            std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(FileIo, AFailedProducerLeavesThePreviousFileAndNoTemp) {
  const std::string out = tmp("out.txt");
  write_file_atomic(out, std::string("first"));
  EXPECT_THROW(write_file_atomic(out,
                                 [](const ByteSink& sink) {
                                   sink("partial", 7);
                                   throw IoError("producer failed");
                                 }),
               IoError);
  EXPECT_EQ(read_file_bytes(out), "first");
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string(), "out.txt");
  }
}

// A file-size limit makes write() fail with EFBIG mid-file, as a full disk does with ENOSPC.
TEST_F(FileIo, AShortWriteIsAnErrorNamingTheFileAndKeepsThePreviousContent) {
  const std::string out = tmp("big.bin");
  write_file_atomic(out, std::string("previous"));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {};
    rl.rlim_cur = rl.rlim_max = 4096;
    ::setrlimit(RLIMIT_FSIZE, &rl);
    const std::string msg = message_of([&] { write_file_atomic(out, std::string(3 << 20, 'z')); });
    ::_exit(msg.find("cannot write '" + out + "'") != std::string::npos ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file_bytes(out), "previous");
  EXPECT_FALSE(fs::exists(temp_path_for(out, child)));
}

TEST_F(FileIo, StaleTempFilesOfDeadWritersAreRemovedAndLiveOnesKept) {
  const std::string out = tmp("model.bin");
  std::ofstream(temp_path_for(out, 999999999)) << "stale";
  std::ofstream(temp_path_for(out, 1)) << "pid 1 runs";
  std::ofstream(tmp("model.bin.tmp.notapid")) << "not ours";
  std::ofstream(tmp("other.bin.tmp.999999998")) << "another target";
  EXPECT_EQ(remove_stale_temp_files(out), 1);
  EXPECT_FALSE(fs::exists(temp_path_for(out, 999999999)));
  EXPECT_TRUE(fs::exists(temp_path_for(out, 1)));
  EXPECT_TRUE(fs::exists(tmp("model.bin.tmp.notapid")));
  EXPECT_TRUE(fs::exists(tmp("other.bin.tmp.999999998")));
  std::ofstream(temp_path_for(out, 999999997)) << "stale";
  write_file_atomic(out, std::string("new"));
  EXPECT_FALSE(fs::exists(temp_path_for(out, 999999997)));
  EXPECT_EQ(read_file_bytes(out), "new");
}

TEST(StreamCheck, AFailedStreamIsAnErrorNamingIt) {
  std::ostringstream good;
  good << "fine";
  EXPECT_NO_THROW(check_stream_written(good, "stdout"));
  std::ostringstream bad;
  bad.setstate(std::ios::badbit);
  EXPECT_NE(message_of([&] { check_stream_written(bad, "stdout"); }).find("stdout: write failed"),
            std::string::npos);
}

TEST(MemoryBudget, RefusesWhatCannotFitNamingEstimateAndBound) {
  const std::uint64_t available = available_memory_bytes();
  EXPECT_GT(available, 0u);
  EXPECT_NO_THROW(check_memory(1024, "a small buffer"));
  const std::string msg =
      message_of([] { check_memory(std::numeric_limits<std::uint64_t>::max() / 2, "the model"); });
  EXPECT_NE(msg.find("the model needs about"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(std::numeric_limits<std::uint64_t>::max() / 2) + " bytes"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("are available"), std::string::npos) << msg;
  EXPECT_THROW(check_memory(std::numeric_limits<std::uint64_t>::max() / 2, "x"),
               MemoryBudgetExceeded);
}

TEST(MemoryBudget, TheEnvironmentLowersTheBound) {
  ::setenv("HETSGD_MEMORY_LIMIT", "2M", 1);
  EXPECT_EQ(available_memory_bytes(), 2u << 20);
  EXPECT_NO_THROW(check_memory(1u << 20, "1 MiB"));
  const std::string msg = message_of([] { check_memory(3u << 20, "3 MiB of rows"); });
  ::unsetenv("HETSGD_MEMORY_LIMIT");
  EXPECT_NE(msg.find("3 MiB of rows needs about 3.0 MiB (3145728 bytes) but only 2.0 MiB "
                     "(2097152 bytes) are available"),
            std::string::npos)
      << msg;
  EXPECT_GT(available_memory_bytes(), 2u << 20);
}

TEST(MemoryBudget, SaturatingArithmetic) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(saturating_mul(1u << 20, 1u << 20), std::uint64_t{1} << 40);
  EXPECT_EQ(saturating_mul(max / 2, 3), max);
  EXPECT_EQ(saturating_add(max - 1, 5), max);
  EXPECT_EQ(saturating_add(2, 3), 5u);
}

TEST_F(FileIo, ModelsWithNonFiniteParametersAreNeitherSavedNorLoaded) {
  SavedModel m;
  m.config.num_features = 4;
  m.config.num_labels = 2;
  m.config.hidden = {2};
  m.params.assign(4 * 2 + 2 + 2 * 2 + 2, 0.5f);
  save_model(tmp("ok.model"), m);
  EXPECT_EQ(load_model(tmp("ok.model")).params, m.params);
  m.params[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(message_of([&] { save_model(tmp("nan.model"), m); }).find("parameter 3"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(tmp("nan.model")));
}

// Version 1 files hold the output layer's weights [hidden x L]; they load into today's layout
// (by label), the rest unchanged.
TEST_F(FileIo, OlderModelVersionsLoadWithTheirOutputLayerByLabel) {
  SavedModel m;
  m.config.num_features = 5;
  m.config.num_labels = 3;
  m.config.hidden = {4, 2};
  m.params.resize(5 * 4 + 4 + 4 * 2 + 2 + 2 * 3 + 3);
  for (std::size_t k = 0; k < m.params.size(); ++k) m.params[k] = 0.5f + static_cast<float>(k);
  save_model(tmp("v4.model"), m);
  const std::string v4 = read_file_bytes(tmp("v4.model"));
  // `v4` without its last `trailers` of the two (f64 weight and u64 length, both 0 here),
  // marked `version`, its checksum made again.
  const auto older = [&](std::uint32_t version, std::size_t trailers) {
    std::string b = v4;
    b.erase(b.size() - sizeof(std::uint64_t) - 16 * trailers, 16 * trailers);
    std::memcpy(&b[8], &version, sizeof version);
    const std::size_t end = b.size() - sizeof(std::uint64_t);
    const std::uint64_t sum = checksum64(b.data(), end);
    std::memcpy(&b[end], &sum, sizeof sum);
    return b;
  };
  // Version 2: no trailer before the checksum.
  std::string bytes = older(2, 2);
  const std::size_t body = bytes.size() - sizeof(std::uint64_t);
  // The same bytes marked version 3 or 4 lack their trailers: refused, nothing read past them.
  EXPECT_THROW(parse_model(older(3, 2), "v3_without_trailer.model"), IoError);
  EXPECT_THROW(parse_model(older(kModelFileVersion, 2), "v4_without_trailers.model"), IoError);
  EXPECT_THROW(parse_model(older(kModelFileVersion, 1), "v4_without_linear.model"), IoError);
  const SavedModel from_v2 = parse_model(bytes, "v2.model");
  EXPECT_EQ(from_v2.params, m.params);
  EXPECT_EQ(from_v2.forest, nullptr);
  // Rewrite as version 1: the output block [3 x 2] by label becomes [2 x 3] by input.
  const std::size_t params_at = body - m.params.size() * sizeof(float);
  const std::size_t out_w = 5 * 4 + 4 + 4 * 2 + 2;
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      std::memcpy(&bytes[params_at + (out_w + i * 3 + j) * sizeof(float)],
                  &m.params[out_w + j * 2 + i], sizeof(float));
    }
  }
  const std::uint32_t v1 = 1;
  std::memcpy(&bytes[8], &v1, sizeof v1);
  const std::uint64_t sum = checksum64(bytes.data(), body);
  std::memcpy(&bytes[body], &sum, sizeof sum);
  EXPECT_EQ(parse_model(bytes, "v1.model").params, m.params);
  // Version 3 (a forest trailer, no linear one) and version 4 files are read as they are.
  const SavedModel from_v3 = parse_model(older(3, 1), "v3.model");
  EXPECT_EQ(from_v3.params, m.params);
  EXPECT_EQ(from_v3.linear, nullptr);
  EXPECT_EQ(load_model(tmp("v4.model")).params, m.params);
}

// Every prefix of a valid model file is refused cleanly (no overflow, no over-read).
TEST_F(FileIo, EveryTruncationOfAModelIsRefused) {
  SavedModel m;
  m.config.num_features = 5;
  m.config.num_labels = 3;
  m.config.hidden = {4, 2};
  m.params.assign(5 * 4 + 4 + 4 * 2 + 2 + 2 * 3 + 3, 0.25f);
  save_model(tmp("m.model"), m);
  const std::string bytes = read_file_bytes(tmp("m.model"));
  for (std::size_t keep = 0; keep < bytes.size(); ++keep) {
    const std::string msg = message_of([&] { parse_model(bytes.substr(0, keep), "cut.model"); });
    EXPECT_NE(msg.find("cut.model"), std::string::npos) << keep << ": " << msg;
  }
}

// Writing through a symbolic link replaces the file it names (atomically, in that file's
// folder) and keeps the link; a dangling link gets its target created.
TEST_F(FileIo, AtomicWriteThroughASymlinkReplacesItsTarget) {
  fs::create_directories(tmp("other"));
  std::ofstream(tmp("other/real")) << "old";
  fs::create_symlink("other/real", tmp("link"));
  check_output_path(tmp("link"), "output");
  write_file_atomic(tmp("link"), std::string("new"));
  EXPECT_TRUE(fs::is_symlink(tmp("link")));
  EXPECT_EQ(read_file_bytes(tmp("other/real")), "new");
  fs::create_symlink("other/fresh", tmp("dangling"));
  write_file_atomic(tmp("dangling"), std::string("made"));
  EXPECT_EQ(read_file_bytes(tmp("other/fresh")), "made");
  EXPECT_TRUE(fs::is_symlink(tmp("dangling")));
}

// The kernel's files report size 0 but have content.
TEST_F(FileIo, FilesReportingSizeZeroAreReadToTheirEnd) {
  MappedFile f("/proc/self/status");
  EXPECT_GT(f.size(), 0u);
  EXPECT_EQ(f.view().substr(0, 5), "Name:");
  MappedFile moved(std::move(f));
  EXPECT_EQ(moved.view().substr(0, 5), "Name:");
  EXPECT_NE(read_text_file("/proc/self/status", 1 << 20).find("Pid:"), std::string::npos);
  std::ofstream(tmp("empty"));
  EXPECT_EQ(MappedFile(tmp("empty")).size(), 0u);
}

}  // namespace
}  // namespace hetsgd
