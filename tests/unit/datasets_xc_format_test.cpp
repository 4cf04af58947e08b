// XC Repository text format: parsing details, exact round trips, and parallel == serial.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/synthetic.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"
#include "tests/common/same_dataset.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::datasets {
namespace {

using test::expect_same_dataset;

TEST(DatasetsXcFormat, ParsesTinyFileWithUnlabelledRowAndUnsortedIds) {
  const Dataset d = read_xc(test::data_path("good/tiny_xc.txt"));
  EXPECT_EQ(d.rows(), 4);
  EXPECT_EQ(d.num_features, 6);
  EXPECT_EQ(d.num_labels, 3);
  EXPECT_EQ(d.x_indptr, (std::vector<index_t>{0, 2, 4, 5, 7}));
  // Row 3 lists "5:3 0:1.5": stored ascending by feature id with values following.
  EXPECT_EQ(d.x_indices, (std::vector<col_t>{0, 3, 1, 5, 2, 0, 5}));
  EXPECT_EQ(d.x_values, (std::vector<float>{1.0f, 0.5f, 2.0f, 0.25f, 1.0f, 1.5f, 3.0f}));
  // Row 1 starts with a blank (no labels); row 3 lists "2,0,2": a set {0, 2}.
  EXPECT_EQ(d.y_indptr, (std::vector<index_t>{0, 2, 2, 3, 5}));
  EXPECT_EQ(d.y_indices, (std::vector<col_t>{0, 2, 1, 0, 2}));
  EXPECT_NO_THROW(d.validate("tiny"));
}

TEST(DatasetsXcFormat, AcceptsCrlfTrailingBlankLinesAndOptionalValueForms) {
  const std::string text = "3 8 4\r\n1,3 0:1e-1 7:+2.5\r\n 2:.5\r\n0\r\n\r\n\n";
  const Dataset d = parse_xc(text, "crlf.txt");
  ASSERT_EQ(d.rows(), 3);
  EXPECT_EQ(d.x_indices, (std::vector<col_t>{0, 7, 2}));
  EXPECT_EQ(d.x_values, (std::vector<float>{0.1f, 2.5f, 0.5f}));
  EXPECT_EQ(d.y_indices, (std::vector<col_t>{1, 3, 0}));
  EXPECT_EQ(d.x_indptr.back(), 3);
  EXPECT_EQ(d.y_indptr, (std::vector<index_t>{0, 2, 2, 3}));  // row 2 has a label, no features
}

TEST(DatasetsXcFormat, HeaderOnlyFileHasZeroRows) {
  const Dataset d = parse_xc("0 10 5\n", "zero.txt");
  EXPECT_EQ(d.rows(), 0);
  EXPECT_EQ(d.num_features, 10);
  EXPECT_EQ(d.num_labels, 5);
}

TEST(DatasetsXcFormat, WriteThenReadIsIdentical) {
  test::ScratchDir tmp(test::temp_path("hetsgd_xc_test_"));
  auto [train, test] = generate_synthetic(with_rows(synthetic_preset("tiny"), 300, 50), 11);
  // Add rows with no labels and no features at all, and awkward float values.
  train.x_indptr.push_back(train.x_indptr.back());
  train.y_indptr.push_back(train.y_indptr.back());
  train.x_values[0] = 1.0f / 3.0f;
  train.x_values[1] = 3.4028235e38f;
  train.x_values[2] = 1.17549435e-38f;
  train.x_values[3] = -0.0f;
  write_xc(train, tmp.path("train.txt"));
  expect_same_dataset(read_xc(tmp.path("train.txt")), train);
  const std::string text = format_xc(train);
  EXPECT_EQ(text.rfind("301 256 32\n", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - 3), "\n \n");  // the empty point is a lone blank
}

TEST(DatasetsXcFormat, WriteReplacesFileAtomicallyAndLeavesNoTemporary) {
  test::ScratchDir tmp(test::temp_path("hetsgd_xc_test_"));
  const Dataset a = power_law_batch(20, 8, 1, 32, 4);
  const Dataset b = power_law_batch(30, 8, 2, 32, 4);
  write_xc(a, tmp.path("d.txt"));
  write_xc(b, tmp.path("d.txt"));
  expect_same_dataset(read_xc(tmp.path("d.txt")), b);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path("")))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(DatasetsXcFormat, WriteRejectsInvalidDatasetAndKeepsOldFile) {
  test::ScratchDir tmp(test::temp_path("hetsgd_xc_test_"));
  const Dataset a = power_law_batch(10, 8, 1, 32, 4);
  write_xc(a, tmp.path("d.txt"));
  Dataset bad = a;
  bad.y_indices[0] = 99;  // >= num_labels
  EXPECT_THROW(write_xc(bad, tmp.path("d.txt")), InvalidArgument);
  expect_same_dataset(read_xc(tmp.path("d.txt")), a);
}

// Chunk boundaries depend only on chunk_bytes, and concatenation is in order, so any thread
// count and any chunk size give the same Dataset as a single-chunk serial parse.
TEST(DatasetsXcFormat, ParallelParseEqualsSerialParse) {
  const Dataset data = generate_synthetic(with_rows(synthetic_preset("bibtex"), 1500, 1), 5).first;
  const std::string text = format_xc(data);
  TextReadOptions one_chunk;
  one_chunk.chunk_bytes = text.size() + 1;
  Dataset serial;
  tbb::task_arena single(1);
  single.execute([&] { serial = parse_xc(text, "gen.txt", one_chunk); });
  expect_same_dataset(serial, data);
  for (std::size_t chunk :
       {std::size_t{1}, std::size_t{100}, std::size_t{4096}, std::size_t{1} << 16}) {
    TextReadOptions opt;
    opt.chunk_bytes = chunk;
    tbb::task_arena arena(4);
    Dataset parallel;
    arena.execute([&] { parallel = parse_xc(text, "gen.txt", opt); });
    SCOPED_TRACE("chunk_bytes " + std::to_string(chunk));
    expect_same_dataset(parallel, serial);
  }
}

}  // namespace
}  // namespace hetsgd::datasets
