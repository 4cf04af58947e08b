// run_pipeline() hands a test set that its evaluations sample to them in a seeded random order:
// a sampled evaluation then scores a random draw of the set, not its first block.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/engine/evaluation.h"
#include "core/engine/pipeline.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

TEST(EnginePipeline, ASampledTestSetIsScoredOnARandomDrawNotOnItsFirstRows) {
  test::EngineProblem p = test::small_problem(2048, 512);
  // The test file sorted as files often are: its first half rows without features (the model
  // can only guess them), its second half as generated.
  Dataset sorted = p.test;
  const index_t half = sorted.rows() / 2;
  Dataset blind;
  blind.num_features = sorted.num_features;
  blind.num_labels = sorted.num_labels;
  for (index_t r = 0; r < sorted.rows(); ++r) {
    blind.x_indptr.push_back(r < half ? blind.x_indptr.back()
                                      : blind.x_indptr.back() + sorted.x_indptr[r + 1] -
                                            sorted.x_indptr[r]);
    if (r >= half) {
      blind.x_indices.insert(blind.x_indices.end(), sorted.x_indices.begin() + sorted.x_indptr[r],
                             sorted.x_indices.begin() + sorted.x_indptr[r + 1]);
      blind.x_values.insert(blind.x_values.end(), sorted.x_values.begin() + sorted.x_indptr[r],
                            sorted.x_values.begin() + sorted.x_indptr[r + 1]);
    }
  }
  blind.y_indptr = sorted.y_indptr;
  blind.y_indices = sorted.y_indices;

  RunSetup s;
  s.config = p.config;
  s.options = test::quick_options();
  s.options.max_epochs = 4.0;
  s.options.eval_max_points = half;  // every in-training evaluation samples half the rows
  s.calibration.forest = 0.0;
  s.calibration.tail_weight = 0.0;
  s.make_devices = [&] { return test::cpu_devices({"cpu:0"}, p.config); };
  s.make_communicator = [](const std::vector<Device*>&) { return make_host_communicator(); };
  RunOutcome out = run_pipeline(s, TrainData{&p.train, &blind, nullptr});
  const TrainResult& r = out.result;
  ASSERT_FALSE(r.evals.empty());
  ASSERT_EQ(r.final_eval_rows, blind.rows()) << "the final evaluation scores every row";

  // The last evaluation scored the final model on `half` rows: the first half would be the
  // blind rows alone; a random draw holds about as many of each half as the whole set.
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  devices[0]->write_params(out.model.params.data());
  const double first = evaluate(*devices[0], blind, 5, 256, half).p_at(1);
  const double whole = evaluate(*devices[0], blind, 5, 256).p_at(1);
  const double sampled = r.evals.back().metrics.p_at(1);
  EXPECT_DOUBLE_EQ(r.final_metrics.p_at(1), whole);
  ASSERT_GT(whole - first, 0.15) << "the halves must differ for the test to tell";
  EXPECT_LT(std::abs(sampled - whole), 0.5 * (whole - first))
      << "first half " << first << ", whole " << whole << ", sampled " << sampled;
}

}  // namespace
}  // namespace hetsgd
