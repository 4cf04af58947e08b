// Binary cache round trips and format detection by load_dataset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/checksum.h"
#include "datasets/binary_cache.h"
#include "datasets/libsvm_format.h"
#include "datasets/load.h"
#include "datasets/synthetic.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"
#include "tests/common/same_dataset.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::datasets {
namespace {

using test::expect_same_dataset;

class DatasetsBinaryCache : public hetsgd::test::ScratchTest {
 protected:
  DatasetsBinaryCache() : ScratchTest("hetsgd_cache_test_", /*per_test=*/false) {}
};

TEST_F(DatasetsBinaryCache, SaveThenLoadIsIdentical) {
  const auto [train, test] =
      generate_synthetic(with_rows(synthetic_preset("eurlex-4k"), 200, 40), 9);
  save_cache(train, tmp("train.cache"));
  save_cache(test, tmp("test.cache"));
  EXPECT_TRUE(is_cache_file(tmp("train.cache")));
  expect_same_dataset(load_cache(tmp("train.cache")), train);
  expect_same_dataset(load_cache(tmp("test.cache")), test);
}

TEST_F(DatasetsBinaryCache, EmptyDatasetRoundTrips) {
  Dataset empty;
  empty.num_features = 7;
  empty.num_labels = 3;
  save_cache(empty, tmp("empty.cache"));
  const Dataset back = load_cache(tmp("empty.cache"));
  EXPECT_EQ(back.rows(), 0);
  EXPECT_EQ(back.num_features, 7);
  EXPECT_EQ(back.num_labels, 3);
  // Header 64 bytes + two 1-element offset arrays + checksum.
  EXPECT_EQ(std::filesystem::file_size(tmp("empty.cache")), 64u + 16u + 8u);
}

TEST_F(DatasetsBinaryCache, OddLengthArraysArePaddedAndStillVerified) {
  Dataset d = power_law_batch(3, 5, 4, 16, 3);
  // One more row with a single feature makes nnz odd, so the arrays need padding.
  if (d.nnz() % 2 == 1) {
    d.x_indices.push_back(0);
    d.x_values.push_back(2.0f);
    d.x_indptr.push_back(d.nnz());
    d.y_indptr.push_back(d.label_nnz());
  }
  d.x_indices.push_back(1);
  d.x_values.push_back(2.0f);
  d.x_indptr.push_back(d.nnz());
  d.y_indptr.push_back(d.label_nnz());
  ASSERT_EQ(d.nnz() % 2, 1);
  save_cache(d, tmp("odd.cache"));
  EXPECT_EQ(std::filesystem::file_size(tmp("odd.cache")) % 8, 0u);
  expect_same_dataset(load_cache(tmp("odd.cache")), d);
}

TEST_F(DatasetsBinaryCache, LoadDatasetDetectsEveryFormat) {
  const Dataset d = power_law_batch(50, 12, 21, 40, 6);
  write_xc(d, tmp("d.txt"));
  save_cache(d, tmp("d.bin"));
  EXPECT_EQ(detect_format(tmp("d.txt")), DataFormat::kXc);
  EXPECT_EQ(detect_format(tmp("d.bin")), DataFormat::kCache);
  EXPECT_EQ(detect_format(test::data_path("good/tiny_libsvm.txt")), DataFormat::kLibsvm);
  EXPECT_STREQ(format_name(DataFormat::kLibsvm), "libsvm");
  expect_same_dataset(load_dataset(tmp("d.txt")), d);
  expect_same_dataset(load_dataset(tmp("d.bin")), d);
  expect_same_dataset(load_dataset(test::data_path("good/tiny_libsvm.txt")),
                      read_libsvm(test::data_path("good/tiny_libsvm.txt")));
  EXPECT_FALSE(is_cache_file(tmp("d.txt")));
}

TEST(DatasetsChecksum, SplitInvariantAndSensitiveToEveryBit) {
  std::string data(1001, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  const std::uint64_t whole = checksum64(data.data(), data.size());
  for (std::size_t split : {1u, 5u, 31u, 32u, 33u, 500u}) {
    Checksum64 c;
    c.update(data.data(), split);
    c.update(data.data() + split, data.size() - split);
    EXPECT_EQ(c.finish(), whole) << "split " << split;
  }
  for (std::size_t byte = 0; byte < data.size(); byte += 37) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string flipped = data;
      flipped[byte] = static_cast<char>(flipped[byte] ^ (1 << bit));
      EXPECT_NE(checksum64(flipped.data(), flipped.size()), whole) << byte << ":" << bit;
    }
  }
  EXPECT_NE(checksum64(data.data(), data.size() - 1), whole);  // length matters
}

}  // namespace
}  // namespace hetsgd::datasets
