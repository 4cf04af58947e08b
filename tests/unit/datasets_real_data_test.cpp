// Reads the real benchmark files when they are present next to the checkout (skips otherwise).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "datasets/binary_cache.h"
#include "datasets/load.h"
#include "datasets/stats.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::datasets {
namespace {

TEST(DatasetsRealData, BibtexTrainMatchesHeaderAndPublishedShape) {
  const std::string dir = test::real_dataset_dir("bibtex");
  if (dir.empty()) GTEST_SKIP() << "bibtex not available";
  const Dataset d = read_xc(dir + "/train.txt");
  EXPECT_EQ(d.rows(), 4880);
  EXPECT_EQ(d.num_features, 1836);
  EXPECT_EQ(d.num_labels, 159);
  const DatasetStats s = compute_stats(d);
  EXPECT_NEAR(s.avg_labels, 2.38, 0.02);
  EXPECT_NEAR(s.avg_nnz, 68.7, 1.0);
  EXPECT_EQ(s.rows_without_labels, 0);
  EXPECT_TRUE(s.binary_values);
}

TEST(DatasetsRealData, DeliciousBothSplitsLoadAndCacheRoundTrips) {
  const std::string dir = test::real_dataset_dir("delicious");
  if (dir.empty()) GTEST_SKIP() << "delicious not available";
  const Dataset train = load_dataset(dir + "/train.txt");
  const Dataset test = load_dataset(dir + "/test.txt");
  EXPECT_EQ(train.rows(), 12920);
  EXPECT_EQ(test.rows(), 3185);
  EXPECT_EQ(train.num_features, 500);
  EXPECT_EQ(train.num_labels, 983);
  const auto tmp = test::temp_path("hetsgd_real_cache_", ".cache");
  save_cache(train, tmp.string());
  const Dataset back = load_cache(tmp.string());
  std::filesystem::remove(tmp);
  EXPECT_EQ(back.x_indptr, train.x_indptr);
  EXPECT_EQ(back.x_indices, train.x_indices);
  EXPECT_EQ(back.x_values, train.x_values);
  EXPECT_EQ(back.y_indices, train.y_indices);
}

}  // namespace
}  // namespace hetsgd::datasets
