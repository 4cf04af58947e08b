// Dataset statistics on a hand-built dataset whose every number is known.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "datasets/stats.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"

namespace hetsgd::datasets {
namespace {

TEST(DatasetsStats, HandBuiltDataset) {
  // tiny_xc.txt: 4 rows, 6 features, 3 labels, nnz 2/2/1/2, labels {0,2} {} {1} {0,2}.
  const DatasetStats s = compute_stats(read_xc(test::data_path("good/tiny_xc.txt")));
  EXPECT_EQ(s.rows, 4);
  EXPECT_EQ(s.nnz, 7);
  EXPECT_DOUBLE_EQ(s.avg_nnz, 1.75);
  EXPECT_EQ(s.min_nnz, 1);
  EXPECT_EQ(s.max_nnz, 2);
  EXPECT_DOUBLE_EQ(s.density, 7.0 / 24.0);
  EXPECT_EQ(s.label_nnz, 5);
  EXPECT_DOUBLE_EQ(s.avg_labels, 1.25);
  EXPECT_EQ(s.max_labels, 2);
  EXPECT_EQ(s.rows_without_labels, 1);
  EXPECT_EQ(s.rows_without_features, 0);
  EXPECT_EQ(s.features_used, 5);  // feature 4 never occurs
  EXPECT_EQ(s.labels_used, 3);
  EXPECT_EQ(s.max_label_frequency, 2);
  EXPECT_DOUBLE_EQ(s.median_label_frequency, 2.0);  // frequencies 2, 2, 1
  EXPECT_DOUBLE_EQ(s.head_1pct_share, 2.0 / 5.0);   // 1% of 3 labels rounds up to 1 label
  EXPECT_EQ(s.tail_labels_le5, 3);
  EXPECT_DOUBLE_EQ(s.min_value, 0.25);
  EXPECT_DOUBLE_EQ(s.max_value, 3.0);
  EXPECT_FALSE(s.binary_values);
  const std::string text = format_stats(s);
  EXPECT_NE(text.find("rows:                    4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rows_without_labels:     1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("avg_labels:              1.25\n"), std::string::npos) << text;
}

TEST(DatasetsStats, EmptyDataset) {
  Dataset d;
  d.num_features = 3;
  d.num_labels = 2;
  const DatasetStats s = compute_stats(d);
  EXPECT_EQ(s.rows, 0);
  EXPECT_EQ(s.min_nnz, 0);
  EXPECT_EQ(s.avg_nnz, 0.0);
  EXPECT_EQ(s.labels_used, 0);
  EXPECT_FALSE(format_stats(s).empty());
}

// A header may declare an id space far wider than the data; the statistics then come from the
// ids present (no table per id) and agree with the dense computation on the same rows.
TEST(DatasetsStats, HugeDeclaredIdSpacesGiveTheSameStatisticsWithoutATablePerId) {
  const Dataset small = read_xc(test::data_path("good/tiny_xc.txt"));
  Dataset wide = small;
  wide.num_features = index_t{1} << 31;
  wide.num_labels = (index_t{1} << 31) - 1;
  const DatasetStats a = compute_stats(small);
  const DatasetStats b = compute_stats(wide);
  EXPECT_EQ(b.num_labels, wide.num_labels);
  // Every statistic of the ids present.
  const auto present = [](const DatasetStats& s) {
    return std::make_tuple(s.features_used, s.labels_used, s.max_label_frequency,
                           s.median_label_frequency, s.tail_labels_le5);
  };
  EXPECT_EQ(present(a), present(b));
  EXPECT_EQ(b.labels_used, 3);
}

}  // namespace
}  // namespace hetsgd::datasets
