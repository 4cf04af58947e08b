// Malformed input never crashes and never passes silently: every case throws IoError whose
// message names the file, the 1-based line (where one exists), the offending value and bound.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "datasets/binary_cache.h"
#include "datasets/libsvm_format.h"
#include "datasets/load.h"
#include "datasets/synthetic.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"

namespace hetsgd::datasets {
namespace {

// Runs `fn`, requires an IoError, and checks that its message contains every piece.
void expect_io_error(const std::function<void()>& fn, const std::vector<std::string>& pieces) {
  try {
    fn();
  } catch (const IoError& e) {
    const std::string msg = e.what();
    for (const auto& piece : pieces) {
      EXPECT_NE(msg.find(piece), std::string::npos) << "message: " << msg << "\nmissing: " << piece;
    }
    return;
  } catch (const std::exception& e) {
    FAIL() << "expected IoError, got another exception: " << e.what();
  }
  FAIL() << "expected IoError, nothing was thrown";
}

void expect_xc_error(const std::string& file, const std::vector<std::string>& pieces) {
  std::vector<std::string> all = pieces;
  all.insert(all.begin(), file);
  expect_io_error([&] { read_xc(test::data_path("bad/" + file)); }, all);
}

TEST(DatasetsBadInput, MissingHeader) {
  expect_xc_error("xc_missing_header.txt", {":1:", "malformed XC header", "'3,23 0:1 5:1'",
                                            "num_points num_features num_labels"});
}

TEST(DatasetsBadInput, HeaderWithTwoNumbers) {
  expect_xc_error("xc_bad_header.txt", {":1:", "'2 10'"});
}

TEST(DatasetsBadInput, FewerLinesThanHeader) {
  expect_xc_error("xc_line_count.txt", {":4:", "2 data lines", "num_points 3"});
}

TEST(DatasetsBadInput, MoreLinesThanHeader) {
  expect_xc_error("xc_extra_lines.txt", {":3:", "data line 2", "num_points 1"});
}

TEST(DatasetsBadInput, LabelOutOfRange) {
  expect_xc_error("xc_label_out_of_range.txt", {":5:", "label id 7 >= num_labels 5"});
}

TEST(DatasetsBadInput, FeatureOutOfRange) {
  expect_xc_error("xc_feature_out_of_range.txt", {":3:", "feature id 12 >= num_features 10"});
}

TEST(DatasetsBadInput, NegativeFeatureId) {
  expect_xc_error("xc_negative_id.txt", {":4:", "negative feature id -4"});
}

TEST(DatasetsBadInput, NegativeLabelId) {
  expect_xc_error("xc_negative_label.txt", {":2:", "negative label id -2"});
}

TEST(DatasetsBadInput, NonNumericValue) {
  expect_xc_error("xc_non_numeric.txt", {":3:", "'abc'", "feature 3"});
}

TEST(DatasetsBadInput, NonNumericLabel) {
  expect_xc_error("xc_non_numeric_label.txt", {":3:", "bad label id 'x1'"});
}

TEST(DatasetsBadInput, NanValue) {
  expect_xc_error("xc_nan_value.txt", {":4:", "value nan", "feature 4", "not finite"});
}

TEST(DatasetsBadInput, InfValue) {
  expect_xc_error("xc_inf_value.txt", {":2:", "value inf", "feature 1", "not finite"});
}

TEST(DatasetsBadInput, ValueOverflowsFloat) {
  expect_xc_error("xc_overflow_value.txt", {":3:", "value 1e40", "float range"});
}

TEST(DatasetsBadInput, DuplicateFeature) {
  expect_xc_error("xc_duplicate_feature.txt", {":2:", "duplicate feature id 1"});
}

TEST(DatasetsBadInput, TokenWithoutColon) {
  expect_xc_error("xc_bad_token.txt", {":3:", "expected 'id:value', got '5'"});
}

TEST(DatasetsBadInput, EmptyFile) {
  expect_xc_error("empty.txt", {":1:", "empty file"});
  expect_io_error([] { read_libsvm(test::data_path("bad/empty.txt")); }, {"empty.txt", "empty"});
  expect_io_error([] { load_dataset(test::data_path("bad/empty.txt")); }, {"empty.txt", "empty"});
}

TEST(DatasetsBadInput, MissingFile) {
  const std::string path = test::data_path("bad/does_not_exist.txt");
  for (const auto& fn :
       std::vector<std::function<void()>>{[&] { read_xc(path); }, [&] { read_libsvm(path); },
                                          [&] { load_cache(path); }, [&] { load_dataset(path); }}) {
    expect_io_error(fn, {"does_not_exist.txt", "No such file"});
  }
  EXPECT_FALSE(is_cache_file(path));
}

TEST(DatasetsBadInput, LibsvmZeroFeatureIdIsBelowOneBasedRange) {
  expect_io_error([] { read_libsvm(test::data_path("bad/libsvm_zero_feature.txt")); },
                  {"libsvm_zero_feature.txt:2:", "feature id 0 < 1"});
  // The same file is fine when declared 0-based.
  EXPECT_EQ(read_libsvm(test::data_path("bad/libsvm_zero_feature.txt"), 0, 0, false).rows(), 2);
}

TEST(DatasetsBadInput, LibsvmIdsCheckedAgainstGivenBounds) {
  const std::string good = test::data_path("good/tiny_libsvm.txt");
  // 1-based feature 3 is 0-based 2, so num_features 2 is one too small.
  expect_io_error([&] { read_libsvm(good, 2, 0); },
                  {"tiny_libsvm.txt:1:", "feature id 3", "num_features + 1 = 3"});
  expect_io_error([&] { read_libsvm(good, 0, 2); },
                  {"tiny_libsvm.txt:2:", "label id 2 >= num_labels 2"});
}

// The reported line is absolute even when the error sits deep inside a later parallel chunk,
// and it is the first error of the file whatever the thread count.
TEST(DatasetsBadInput, LineNumberIsExactAcrossParallelChunks) {
  std::string text = "1000 50 10\n";
  for (int i = 0; i < 1000; ++i) {
    if (i == 775) {
      text += "3 1:1 77:1\n";  // line 777
    } else if (i == 900) {
      text += "11 1:1\n";  // a later error must not win
    } else {
      text += std::to_string(i % 10) + " " + std::to_string(i % 50) + ":1\n";
    }
  }
  TextReadOptions small;
  small.chunk_bytes = 64;
  for (int threads : {1, 4}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      expect_io_error([&] { parse_xc(text, "gen.txt", small); },
                      {"gen.txt:777:", "feature id 77 >= num_features 50"});
    });
  }
}

// Random byte-level damage to a valid file: the reader either returns a Dataset that validates
// or throws IoError; it never crashes, hangs or throws anything else.
TEST(DatasetsBadInput, RandomlyDamagedTextNeverCrashes) {
  const std::string good = format_xc(power_law_batch(60, 12, /*seed=*/5, /*num_features=*/40, 6));
  const char kAlphabet[] = "0123456789:, \n-.eEnaif+x\r";
  SplitMix64 rng(2024);
  TextReadOptions small;
  small.chunk_bytes = 128;
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t pos = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[pos] = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
          break;
        case 1:
          text.erase(pos, 1 + rng() % 8);
          break;
        default:
          text.resize(pos);
          break;
      }
      if (text.empty()) break;
    }
    try {
      const Dataset d = parse_xc(text, "damaged.txt", small);
      EXPECT_NO_THROW(d.validate("damaged")) << "trial " << trial;
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("damaged.txt:"), std::string::npos) << e.what();
    }
  }
}

class DatasetsBadCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("hetsgd_bad_cache_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "data.cache").string();
    save_cache(power_law_batch(40, 16, /*seed=*/3, /*num_features=*/64, /*avg_nnz=*/8), path_);
    std::ifstream in(path_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
    ASSERT_GT(bytes_.size(), 200u);
    ASSERT_NO_THROW(load_cache(path_));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes `content` as a new file and returns its path.
  std::string write(const std::string& name, const std::string& content) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::filesystem::path dir_;
  std::string path_;
  std::string bytes_;
};

TEST_F(DatasetsBadCache, Truncated) {
  for (std::size_t keep :
       {bytes_.size() - 1, bytes_.size() / 2, std::size_t{70}, std::size_t{10}}) {
    const std::string p = write("truncated.cache", bytes_.substr(0, keep));
    expect_io_error([&] { load_cache(p); },
                    {"truncated.cache", "truncated", std::to_string(keep) + " bytes"});
  }
}

TEST_F(DatasetsBadCache, TrailingGarbage) {
  const std::string p = write("long.cache", bytes_ + "xyz");
  expect_io_error([&] { load_cache(p); },
                  {"long.cache", std::to_string(bytes_.size() + 3) + " bytes >"});
}

TEST_F(DatasetsBadCache, WrongMagic) {
  std::string b = bytes_;
  b[0] = 'X';
  const std::string p = write("magic.cache", b);
  expect_io_error([&] { load_cache(p); }, {"magic.cache", "wrong magic 'XETSGDDS'", "HETSGDDS"});
  EXPECT_FALSE(is_cache_file(p));
}

TEST_F(DatasetsBadCache, WrongVersion) {
  std::string b = bytes_;
  b[8] = 7;  // version is the little-endian uint32 at offset 8
  const std::string p = write("version.cache", b);
  expect_io_error([&] { load_cache(p); },
                  {"version.cache", "unsupported cache version 7", "version 1"});
}

TEST_F(DatasetsBadCache, CorruptedPayloadFailsChecksum) {
  // Flip one bit at several positions: in the offsets, the values and the checksum itself.
  for (std::size_t pos :
       {std::size_t{70}, bytes_.size() / 2, bytes_.size() - 20, bytes_.size() - 1}) {
    std::string b = bytes_;
    b[pos] = static_cast<char>(b[pos] ^ 0x10);
    const std::string p = write("flipped.cache", b);
    expect_io_error([&] { load_cache(p); }, {"flipped.cache", "checksum mismatch", "corrupted"});
  }
}

TEST_F(DatasetsBadCache, HeaderCountsLargerThanFile) {
  std::string b = bytes_;
  const std::int64_t huge = std::int64_t{1} << 40;
  std::memcpy(&b[40], &huge, 8);  // nnz lives at offset 40
  const std::string p = write("huge.cache", b);
  expect_io_error([&] { load_cache(p); }, {"huge.cache", "truncated", "nnz = 1099511627776"});
}

}  // namespace
}  // namespace hetsgd::datasets
