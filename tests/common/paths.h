/// \file tests/common/paths.h
/// Where the tests find their malformed-input corpus and the optional real datasets.
#pragma once

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hetsgd::test {

/// The checked-in corpus under tests/data.
inline std::string data_path(const std::string& name) {
  return std::string(HETSGD_TEST_DATA_DIR) + "/" + name;
}

/// One line of the malformed-input corpus's table (tests/data/bad/expected.tsv).
struct BadCorpusCase {
  std::string file;                 ///< under tests/data/bad
  std::string reader;               ///< "data" (any dataset command) or "model" (-m/--model)
  std::vector<std::string> pieces;  ///< what the error message must contain (one at least)
};

/// The corpus's table, its comments and blank lines skipped; a line with fewer than three
/// fields fails the test and is skipped.
inline std::vector<BadCorpusCase> bad_corpus_cases() {
  std::ifstream in(data_path("bad/expected.tsv"));
  std::vector<BadCorpusCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, '\t')) cols.push_back(col);
    if (cols.size() < 3) {
      ADD_FAILURE() << "expected.tsv: line needs file, reader and a message piece: " << line;
      continue;
    }
    cases.push_back({cols[0], cols[1], {cols.begin() + 2, cols.end()}});
  }
  return cases;
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
