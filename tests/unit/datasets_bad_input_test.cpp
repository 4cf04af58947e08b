// Malformed input never crashes and never passes silently: every case throws IoError whose
// message names the file, the 1-based line (where one exists), the offending value and bound.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "datasets/binary_cache.h"
#include "datasets/libsvm_format.h"
#include "datasets/load.h"
#include "datasets/npz_format.h"
#include "datasets/synthetic.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"
#include "tests/common/scratch_dir.h"

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

// Leading zeros are decimal ("007" is 7, however many zeros); a sign makes an id negative even
// as "-0" or beyond 18 digits, refused with file:line, the id and the bound.
TEST(DatasetsBadInput, ZeroPaddedIdsAreDecimalAndSignedIdsAreRefused) {
  const Dataset d = parse_xc("2 10 8\n007 0003:1.5\n1 00000000000000000000002:1\n", "pad.txt");
  EXPECT_EQ(d.y_indices, (std::vector<col_t>{7, 1}));
  EXPECT_EQ(d.x_indices, (std::vector<col_t>{3, 2}));
  expect_io_error([] { parse_xc("1 10 8\n008 1:1\n", "pad.txt"); },
                  {"pad.txt:2:", "label id 008 >= num_labels 8"});
  expect_io_error([] { parse_xc("2 10 5\n1 1:1\n-0 1:1\n", "neg.txt"); },
                  {"neg.txt:3:", "negative label id -0 < 0"});
  expect_io_error([] { parse_xc("1 10 5\n1 -0:1\n", "neg.txt"); },
                  {"neg.txt:2:", "negative feature id -0 < 0"});
  expect_io_error([] { parse_xc("1 10 5\n1 -99999999999999999999:1\n", "neg.txt"); },
                  {"neg.txt:2:", "negative feature id -99999999999999999999"});
  expect_io_error([] { parse_xc("1 10 5\n-99999999999999999999 1:1\n", "neg.txt"); },
                  {"neg.txt:2:", "negative label id -99999999999999999999"});
  expect_io_error([] { parse_libsvm("1 2:1\n0 -0:1\n", "neg.svm"); },
                  {"neg.svm:2:", "negative feature id -0 < 1", "1-based"});
  expect_io_error([] { parse_libsvm("1 2:1\n-3 1:1\n", "neg.svm", 0, 4); },
                  {"neg.svm:2:", "negative label id -3"});
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

class DatasetsBadCache : public hetsgd::test::ScratchTest {
 protected:
  DatasetsBadCache() : ScratchTest("hetsgd_bad_cache_", /*per_test=*/false) {}
  void SetUp() override {
    ScratchTest::SetUp();
    path_ = (dir_ / "data.cache").string();
    save_cache(power_law_batch(40, 16, /*seed=*/3, /*num_features=*/64, /*avg_nnz=*/8), path_);
    std::ifstream in(path_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
    ASSERT_GT(bytes_.size(), 200u);
    ASSERT_NO_THROW(load_cache(path_));
  }
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

// scipy .npz files built member by member: a stored zip (numpy.savez) of .npy arrays, so that
// one field at a time can be made hostile behind a valid CRC.
class DatasetsBadNpz : public DatasetsBadCache {
 protected:
  static void put(std::string* out, std::uint64_t v, int bytes) {
    // Little-endian; bytes past the eighth are zero (a shift by 64 is undefined).
    for (int i = 0; i < bytes; ++i) {
      out->push_back(static_cast<char>(i < 8 ? (v >> (8 * i)) & 0xff : 0));
    }
  }
  template <class T>
  static std::string raw(const std::vector<T>& v) {
    return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
  }
  // A .npy array: version 1.0, the dict `descr`, `shape` (a tuple's text), then `data`.
  static std::string array(const std::string& descr, const std::string& shape,
                           const std::string& data) {
    std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + h.size() + 1) % 64 != 0) h.push_back(' ');
    h.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    put(&out, h.size(), 2);
    return out + h + data;
  }
  // The arrays of the 2 x 3 matrix [[0 0 1] [2 3 0]], with `name` replaced by `member`.
  static std::string csr_zip(const std::string& name = "", const std::string& member = "") {
    const char32_t csr[3] = {U'c', U's', U'r'};
    std::vector<std::pair<std::string, std::string>> m = {
        {"indices", array("<i4", "(3,)", raw(std::vector<std::int32_t>{2, 0, 1}))},
        {"indptr", array("<i8", "(3,)", raw(std::vector<std::int64_t>{0, 1, 3}))},
        {"format", array("<U3", "()", std::string(reinterpret_cast<const char*>(csr), 12))},
        {"shape", array("<i8", "(2,)", raw(std::vector<std::int64_t>{2, 3}))},
        {"data", array("<f4", "(3,)", raw(std::vector<float>{1, 2, 3}))}};
    std::string zip, dir;
    for (auto& [n, body] : m) {
      if (n == name) body = member;
      const std::string file = n + ".npy";
      std::string common;
      put(&common, 20, 2);
      put(&common, 0, 8);  // flags, method (stored), time, date
      put(&common, crc32(0L, reinterpret_cast<const Bytef*>(body.data()), body.size()), 4);
      put(&common, body.size(), 4);
      put(&common, body.size(), 4);
      put(&common, file.size(), 2);
      put(&common, 0, 2);
      dir += "PK\x01\x02";
      put(&dir, 20, 2);
      dir += common;
      put(&dir, 0, 10);  // comment length, disk, internal and external attributes
      put(&dir, zip.size(), 4);
      dir += file;
      zip += "PK\x03\x04" + common + file + body;
    }
    std::string end = "PK\x05\x06";
    put(&end, 0, 4);
    put(&end, m.size(), 2);
    put(&end, m.size(), 2);
    put(&end, dir.size(), 4);
    put(&end, zip.size(), 4);
    put(&end, 0, 2);
    return zip + dir + end;
  }
  // read_npz of `bytes` throws IoError naming the file and every piece, no library text.
  void expect_npz_error(const std::string& bytes, const std::vector<std::string>& pieces) {
    const std::string p = write("bad.npz", bytes);
    std::vector<std::string> all = pieces;
    all.push_back(p);
    expect_io_error([&] { read_npz(p); }, all);
    try {
      read_npz(p);
    } catch (const std::exception& e) {
      for (const char* raw_text : {"std::", "stoull", "substr", "max_size", "bad_alloc"}) {
        EXPECT_EQ(std::string(e.what()).find(raw_text), std::string::npos) << e.what();
      }
    }
  }
};

TEST_F(DatasetsBadNpz, TheBuiltFileIsAValidMatrix) {
  const NpzCsr c = read_npz(write("good.npz", csr_zip()));
  EXPECT_EQ(c.rows, 2);
  EXPECT_EQ(c.cols, 3);
  EXPECT_EQ(c.indices, (std::vector<col_t>{2, 0, 1}));
  EXPECT_EQ(c.indptr, (std::vector<index_t>{0, 1, 3}));
}

// Float ids would be truncated (1.5 read as 1): scipy writes int32/int64, anything else is
// refused naming the array and its dtype.
TEST_F(DatasetsBadNpz, IdsStoredAsFloatsAreRefused) {
  expect_npz_error(csr_zip("indices", array("<f8", "(3,)", raw(std::vector<double>{2, 0, 1.5}))),
                   {"indices", "dtype '<f8'", "int32 or int64"});
  expect_npz_error(csr_zip("indptr", array("<f4", "(3,)", raw(std::vector<float>{0, 1, 3}))),
                   {"indptr", "dtype '<f4'"});
}

TEST_F(DatasetsBadNpz, HeaderFieldsAreCheckedBeforeAllocating) {
  // A shape that is not a number (std::stoull's exception before).
  expect_npz_error(csr_zip("indptr", array("<i8", "(x3,)", raw(std::vector<std::int64_t>{0}))),
                   {"indptr", "shape entry 'x3'"});
  // 2^61 values in 12 bytes (a vector beyond max_size before).
  expect_npz_error(
      csr_zip("indices", array("<i4", "(2305843009213693952,)", raw(std::vector<int>{2, 0, 1}))),
      {"indices", "holds 12 bytes for 2305843009213693952 values"});
  // A header length past the member's end.
  std::string member = array("<f4", "(3,)", raw(std::vector<float>{1, 2, 3}));
  member[8] = member[9] = '\xff';
  expect_npz_error(csr_zip("data", member), {"data", ".npy header of 65535 bytes"});
  // A dtype that is not quoted, a shape that is not a tuple.
  expect_npz_error(csr_zip("data", array("<f4", "(3,)", "").replace(20, 1, " ")),
                   {"data", "'descr' is not a quoted dtype"});
  // Indptr of the wrong length for the shape.
  expect_npz_error(csr_zip("indptr", array("<i8", "(2,)", raw(std::vector<std::int64_t>{0, 1}))),
                   {"indptr", "2 entries for shape[0] = 2 rows"});
}

TEST_F(DatasetsBadNpz, ZipSizesAreCheckedAgainstTheFile) {
  const std::string good = csr_zip();
  const std::size_t eocd = good.size() - 22;
  std::string many = good;  // 65535 directory entries in a file of a few hundred bytes
  many[eocd + 8] = many[eocd + 9] = many[eocd + 10] = many[eocd + 11] = '\xff';
  expect_npz_error(many, {"declares 65535 entries"});
  std::string far = good;  // the directory 2 GiB past the end
  far[eocd + 16] = far[eocd + 17] = far[eocd + 18] = '\xff';
  far[eocd + 19] = '\x7f';
  expect_npz_error(far, {"zip directory entry 0 at byte 2147483647", "past the end"});
  // A deflated member claiming 2 GiB inflated (allocated before it was checked).
  const std::string p = (dir_ / "deflated.npz").string();
  write_npz(p, read_npz(write("good.npz", good)), /*compressed=*/true);
  std::ifstream in(p, std::ios::binary);
  std::string z(std::istreambuf_iterator<char>(in), {});
  const std::size_t entry = z.find("PK\x01\x02");
  ASSERT_NE(entry, std::string::npos);
  z[entry + 24] = z[entry + 25] = z[entry + 26] = '\xff';
  z[entry + 27] = '\x7f';
  expect_npz_error(z, {"member 'indices.npy'", "declares 2147483647 bytes inflated"});
}

}  // namespace
}  // namespace hetsgd::datasets
