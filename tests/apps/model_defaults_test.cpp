// make_model_config: the automatic label smoothing applies where the output layer can take it
// (softmax, every label in one scoring block), an explicit --label-smoothing always wins, and
// the shortlisted regime keeps its defaults.
#include <gtest/gtest.h>

#include "apps/cli_common.h"
#include "core/dataset.h"

namespace hetsgd::app {
namespace {

Dataset shape(index_t labels) {
  Dataset d;
  d.num_features = 10;
  d.num_labels = labels;
  return d;
}

TEST(ModelDefaults, AutomaticLabelSmoothingOnlyWhereTheOutputLayerTakesIt) {
  ModelArgs a;
  EXPECT_EQ(make_model_config(a, shape(983)).label_smoothing, 0.3f);
  EXPECT_EQ(make_model_config(a, shape(983)).dropout, 0.5f);
  // More labels than one scoring block (4,096 by default), a shortlist, or bce: off.
  EXPECT_EQ(make_model_config(a, shape(30938)).label_smoothing, 0.0f);
  EXPECT_EQ(make_model_config(a, shape(670091)).label_smoothing, 0.0f);
  EXPECT_EQ(make_model_config(a, shape(670091)).dropout, 0.0f);
  ModelArgs bce;
  bce.loss = "bce";
  EXPECT_EQ(make_model_config(bce, shape(983)).label_smoothing, 0.0f);
  ModelArgs shortlist;
  shortlist.output_layer = "shortlist";
  EXPECT_EQ(make_model_config(shortlist, shape(983)).label_smoothing, 0.0f);
}

TEST(ModelDefaults, AnExplicitLabelSmoothingWins) {
  ModelArgs a;
  a.label_smoothing = 0.0f;
  a.label_smoothing_given = true;
  EXPECT_EQ(make_model_config(a, shape(983)).label_smoothing, 0.0f);
  a.label_smoothing = 0.1f;
  EXPECT_EQ(make_model_config(a, shape(983)).label_smoothing, 0.1f);
}

}  // namespace
}  // namespace hetsgd::app
