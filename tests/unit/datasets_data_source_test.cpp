// The data-loading policy shared by every command (datasets/data_source.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "datasets/data_source.h"
#include "tests/common/paths.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::datasets {
namespace {

namespace fs = std::filesystem;

class DataSource : public hetsgd::test::ScratchTest {
 protected:
  DataSource() : ScratchTest("hetsgd_data_source_") {}
  std::string message_of(const DataRequest& r) {
    try {
      load_data_pair(r);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(DataSource, TrainAloneIsEvaluatedOnItself) {
  DataRequest r;
  r.train_path = test::data_path("good/tiny_xc.txt");
  const DataPair p = load_data_pair(r);
  EXPECT_TRUE(p.test_is_train);
  EXPECT_EQ(p.test.rows(), p.train.rows());
  EXPECT_EQ(p.description, r.train_path);
}

TEST_F(DataSource, ALibsvmTestSetTakesTheTrainingShape) {
  DataRequest r;
  r.train_path = write("train.svm", "0 1:1 3:1\n1,2 2:1\n2 6:0.5\n");
  // Labels 0..1 and features 1..2 only: inferred per file this would be 2 labels, 2 features.
  r.test_path = write("test.svm", "0 1:1\n1 2:1\n");
  const DataPair p = load_data_pair(r);
  EXPECT_FALSE(p.test_is_train);
  EXPECT_EQ(p.train.num_labels, 3);
  EXPECT_EQ(p.test.num_labels, 3);
  EXPECT_EQ(p.test.num_features, p.train.num_features);
  r.test_path = write("wide.svm", "0 1:1\n3 2:1\n");
  const std::string msg = message_of(r);
  EXPECT_NE(msg.find("wide.svm:2: label id 3 >= num_labels 3"), std::string::npos) << msg;
}

TEST_F(DataSource, ShapeMismatchesNameBothFiles) {
  DataRequest r;
  r.train_path = write("train.txt", "2 5 3\n0 1:1\n2 4:1\n");
  r.test_path = write("test.txt", "1 5 4\n3 1:1\n");
  const std::string msg = message_of(r);
  EXPECT_NE(msg.find("test.txt: 4 labels but " + r.train_path + " has 3"), std::string::npos)
      << msg;
}

TEST_F(DataSource, EmptyOrShapelessTrainingSetsAreRefusedNamingTheFile) {
  DataRequest r;
  r.train_path = write("none.txt", "0 5 3\n");
  EXPECT_NE(message_of(r).find("none.txt: training data has no rows"), std::string::npos);
  r.train_path = write("nolabels.txt", "2 5 0\n 1:1\n 2:1\n");
  EXPECT_NE(message_of(r).find("nolabels.txt: training data has num_labels 0"), std::string::npos);
  r.train_path = write("nofeatures.txt", "2 0 3\n0\n1\n");
  EXPECT_NE(message_of(r).find("nofeatures.txt: training data has num_features 0"),
            std::string::npos)
      << message_of(r);
}

TEST_F(DataSource, TestWithoutTrainIsRefusedAndSyntheticIsTheDefault) {
  DataRequest r;
  r.test_path = test::data_path("good/tiny_xc.txt");
  EXPECT_NE(message_of(r).find("--test needs --train"), std::string::npos);
  DataRequest s;
  s.synthetic = "tiny";
  const DataPair p = load_data_pair(s);
  EXPECT_FALSE(p.test_is_train);
  EXPECT_GT(p.train.rows(), 0);
  EXPECT_GT(p.test.rows(), 0);
  EXPECT_NE(p.description.find("synthetic tiny-shaped (seed 7"), std::string::npos);
}

}  // namespace
}  // namespace hetsgd::datasets
