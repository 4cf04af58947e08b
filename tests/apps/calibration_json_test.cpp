// The calibration's fields in `train --json`: what was trained and how the linear classifiers'
// rows were chosen.
#include <gtest/gtest.h>

#include "apps/calibration_flags.h"
#include "core/engine/calibrate.h"

namespace hetsgd::app {
namespace {

TEST(CalibrationJson, LinearClassifiersSayHowTheirRowsWereChosen) {
  Calibration c;
  c.linear_weights = 120;
  c.linear_seconds = 1.5;
  nlohmann::json every = calibration_to_json(c);
  EXPECT_EQ(every["linear_weights"], 120);
  EXPECT_EQ(every["linear_time_s"], 1.5);
  EXPECT_FALSE(every.contains("linear_shortlist"));  // every row
  c.linear_shortlist = kLinearShortlist;
  const nlohmann::json shortlisted = calibration_to_json(c);
  EXPECT_EQ(shortlisted["linear_shortlist"], kLinearShortlist);
  EXPECT_FALSE(calibration_to_json(Calibration{}).contains("linear_weights"));  // none trained
}

}  // namespace
}  // namespace hetsgd::app
