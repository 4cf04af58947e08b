// Multi-label LIBSVM reader: 1-based features, 0-based labels, inferred or given sizes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/libsvm_format.h"
#include "tests/common/paths.h"

namespace hetsgd::datasets {
namespace {

TEST(DatasetsLibsvmFormat, OneBasedFeaturesAreShiftedAndSizesInferred) {
  const Dataset d = read_libsvm(test::data_path("good/tiny_libsvm.txt"));
  ASSERT_EQ(d.rows(), 2);
  EXPECT_EQ(d.num_features, 3);  // max 1-based id 3 -> 0-based 2 -> width 3
  EXPECT_EQ(d.num_labels, 3);    // max label 2
  EXPECT_EQ(d.x_indices, (std::vector<col_t>{0, 2, 1}));
  EXPECT_EQ(d.y_indices, (std::vector<col_t>{0, 1, 2}));
  EXPECT_EQ(d.y_indptr, (std::vector<index_t>{0, 1, 3}));
}

TEST(DatasetsLibsvmFormat, GivenSizesAreKeptEvenWhenLargerThanUsed) {
  const Dataset d = read_libsvm(test::data_path("good/tiny_libsvm.txt"), 100, 7);
  EXPECT_EQ(d.num_features, 100);
  EXPECT_EQ(d.num_labels, 7);
}

TEST(DatasetsLibsvmFormat, ZeroBasedOptionKeepsIds) {
  const Dataset z = parse_libsvm("1 0:1 4:2\n0 2:1\n", "z.txt", 0, 0, /*one_based=*/false);
  EXPECT_EQ(z.num_features, 5);
  EXPECT_EQ(z.x_indices, (std::vector<col_t>{0, 4, 2}));
}

TEST(DatasetsLibsvmFormat, LineWithoutLabelsStartsWithFeature) {
  const Dataset d = parse_libsvm("1:1 3:1\n 2:1\n4 1:1\n", "nolabel.txt");
  ASSERT_EQ(d.rows(), 3);
  EXPECT_EQ(d.y_indptr, (std::vector<index_t>{0, 0, 0, 1}));
  EXPECT_EQ(d.num_labels, 5);
  EXPECT_EQ(d.x_indptr, (std::vector<index_t>{0, 2, 3, 4}));
}

TEST(DatasetsLibsvmFormat, NegativeSizeIsInvalidArgument) {
  EXPECT_THROW(parse_libsvm("0 1:1\n", "x.txt", -1, 0), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd::datasets
