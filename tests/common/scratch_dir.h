/// \file tests/common/scratch_dir.h
/// Scratch files and folders under the system temporary folder. Names carry the process id so
/// that two test binaries (ctest -j) never share one; per-test folders also carry the test's
/// name so that one test's leftovers cannot satisfy another's checks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hetsgd::test {

/// `<temp>/<prefix><pid><suffix>`; nothing is created.
inline std::filesystem::path temp_path(const std::string& prefix, const std::string& suffix = "") {
  return std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()) + suffix);
}

/// `<temp>/<prefix><pid>_<test name>`, for the test that is running.
inline std::filesystem::path per_test_temp_path(const std::string& prefix) {
  return temp_path(
      prefix, std::string("_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

/// The bytes of the file at `path` (empty when it cannot be read).
inline std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A folder made on construction and removed, with everything in it, on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() { std::filesystem::remove_all(dir_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

/// Fixture with a fresh folder per test (`per_test_temp_path(prefix)`, or `temp_path(prefix)`
/// when `per_test` is false), made in SetUp and removed in TearDown. A fixture that overrides
/// SetUp calls ScratchTest::SetUp() first.
class ScratchTest : public ::testing::Test {
 protected:
  explicit ScratchTest(std::string prefix, bool per_test = true)
      : prefix_(std::move(prefix)), per_test_(per_test) {}
  void SetUp() override {
    dir_ = per_test_ ? per_test_temp_path(prefix_) : temp_path(prefix_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  /// The path of `name` inside the folder.
  std::string tmp(const std::string& name) const { return (dir_ / name).string(); }
  /// Writes `text` (bytes as given) to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = tmp(name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
  bool per_test_;
};

}  // namespace hetsgd::test
