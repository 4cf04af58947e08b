/// \file tests/common/paths.h
/// Where the tests find their malformed-input corpus and the optional real datasets.
#pragma once

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <string>

namespace hetsgd::test {

/// The checked-in corpus under tests/data.
inline std::string data_path(const std::string& name) {
  return std::string(HETSGD_TEST_DATA_DIR) + "/" + name;
}

/// Folder of a real dataset (bibtex, delicious), or "" when absent (tests then GTEST_SKIP).
/// HETSGD_DATASETS overrides the default location next to the checkout.
inline std::string real_dataset_dir(const std::string& name) {
  const char* env = std::getenv("HETSGD_DATASETS");
  const std::string root = env != nullptr ? env : HETSGD_SHARED_DATASETS_DIR;
  const std::string dir = root + "/" + name;
  struct stat st {};
  if (::stat((dir + "/train.txt").c_str(), &st) != 0) return "";
  return dir;
}

}  // namespace hetsgd::test
