#include "core/engine/run_checks.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

Dataset one_row(index_t features, index_t labels) {
  Dataset d;
  d.num_features = features;
  d.num_labels = labels;
  d.x_indptr = {0, 0};
  d.y_indptr = {0, 0};
  return d;
}

// The message of check_shapes(config, train, eval), or "" when it accepts them.
std::string shape_error(const Dataset& train, const Dataset& eval) {
  ModelConfig config = test::fixed_model();
  config.num_features = 10;
  config.num_labels = 5;
  try {
    check_shapes(config, train, eval);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(EngineRunChecks, ShapeErrorsNameTheSetAndBothCounts) {
  EXPECT_EQ(shape_error(one_row(10, 5), one_row(8, 5)), "");
  EXPECT_EQ(shape_error(Dataset{}, one_row(10, 5)), "train: the training set has no rows");
  EXPECT_EQ(shape_error(one_row(11, 5), one_row(10, 5)),
            "train: training set has 11 features, the model 10");
  EXPECT_EQ(shape_error(one_row(10, 4), one_row(10, 5)),
            "train: training set has 4 labels, the model 5");
  EXPECT_EQ(shape_error(one_row(10, 5), one_row(12, 5)),
            "train: evaluation set has 12 features, the model 10");
  EXPECT_EQ(shape_error(one_row(10, 5), one_row(10, 6)),
            "train: evaluation set has 6 labels, the model 5");
  // The training set is checked first, features before labels.
  EXPECT_EQ(shape_error(one_row(11, 4), one_row(12, 6)),
            "train: training set has 11 features, the model 10");
}

}  // namespace
}  // namespace hetsgd
