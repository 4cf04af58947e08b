// Training through the engine on CUDA replicas (skipped without a GPU; HETSGD_REQUIRE_GPU=1
// turns the skip into a failure): adaptive on two virtual devices of one GPU and on a GPU next
// to a CPU worker reaches a P@1 on real bibtex; a CUDA run checkpoints and resumes; a mixed
// run above 100,000 labels trains one output-layer objective (the full softmax) everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/communicator.h"
#include "core/engine/checkpoint.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "datasets/xc_format.h"
#include "kernels/registry.h"
#include "tests/common/gpu_test.h"
#include "tests/common/paths.h"
#include "tests/common/plain_training.h"
#include "tests/common/small_models.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

std::vector<std::unique_ptr<Device>> replicas(const std::vector<std::string>& names,
                                              const ModelConfig& config) {
  std::vector<DeviceId> ids;
  for (const std::string& n : names) ids.push_back(parse_device_id(n));
  const ModelConfig one = resolve_output_layer(config, ids);
  DeviceOptions opts;
  opts.threads = 4;
  std::vector<std::unique_ptr<Device>> out;
  for (const DeviceId& id : ids) out.push_back(make_device(id, one, opts));
  return out;
}

// Adaptive on `names` over real bibtex with the plain recipe of the CPU accuracy test
// (hidden 128, Adam, weight decay 1e-4, no dropout), 20 epochs: the selected model's test P@1.
double bibtex_p1(const std::vector<std::string>& names) {
  const std::string dir = test::real_dataset_dir("bibtex");
  if (dir.empty()) return -1.0;
  const Dataset train_set = datasets::read_xc(dir + "/train.txt");
  const Dataset test_set = datasets::read_xc(dir + "/test.txt");
  ModelConfig c = test::softmax_mlp_for(train_set);
  c.optimizer.weight_decay = 1e-4f;
  auto devices = replicas(names, c);
  auto comm = make_communicator(test::raw(devices));
  TrainOptions o;
  o.algo = Algo::kAdaptive;
  o.max_epochs = 20.0;
  const TrainResult r = train(devices, *comm, train_set, test_set, o);
  std::printf("adaptive on %s: P@1 %.4f after %.1f epochs, %.0f samples/s\n",
              names.size() == 2 ? (names[0] + "," + names[1]).c_str() : names[0].c_str(),
              r.final_metrics.p_at(1), r.epochs, r.samples_per_second());
  return r.final_metrics.p_at(1);
}

class GpuEngine : public ::testing::Test {
 protected:
  void SetUp() override { test::require_cuda_devices(1); }
};

// The CPU recipe reaches 0.62 in a plain loop (tests/unit/real_data_accuracy_test.cpp); two
// merged replicas may lose a little of it, not more.
TEST_F(GpuEngine, AdaptiveOnVirtualDevicesReachesBibtexP1) {
  const double p1 = bibtex_p1({"cuda:0", "cuda:0"});
  if (p1 < 0.0) GTEST_SKIP() << "bibtex dataset not present";
  EXPECT_GE(p1, 0.58);
}

TEST_F(GpuEngine, AdaptiveOnGpuAndCpuReachesBibtexP1) {
  const double p1 = bibtex_p1({"cuda:0", "cpu:0"});
  if (p1 < 0.0) GTEST_SKIP() << "bibtex dataset not present";
  EXPECT_GE(p1, 0.58);
}

// A CUDA run stopped after 3 rounds and resumed to 6 follows the uninterrupted run: same
// rounds and samples, and the same centre up to the float rounding of the GPU's atomic
// scatter (the CPU device's twin test asks for equality).
TEST_F(GpuEngine, CheckpointAndResumeOnCuda) {
  test::EngineProblem p = test::small_problem(1000, 128, OptimizerKind::kAdam);
  auto comm = make_host_communicator();
  const std::string path =
      ::testing::TempDir() + "gpu_engine_" + std::to_string(::getpid()) + ".ckpt";
  TrainOptions base;
  base.b0 = 32;
  base.b_min = 16;
  base.batch_policy = BatchPolicy::kFixed;
  base.round_samples = 400;
  base.max_epochs = 0.0;
  base.eval_every_rounds = 3;

  TrainOptions full = base;
  full.max_rounds = 6;
  auto d_full = replicas({"cuda:0"}, p.config);
  const TrainResult want = train(d_full, *comm, p.train, p.test, full);

  TrainOptions first = base;
  first.max_rounds = 3;
  first.checkpoint_path = path;
  auto d_first = replicas({"cuda:0"}, p.config);
  const TrainResult half = train(d_first, *comm, p.train, p.test, first);
  const TrainState saved = load_checkpoint(path);
  EXPECT_EQ(saved.round, 3);
  EXPECT_EQ(saved.centre, half.centre);

  TrainOptions second = base;
  second.max_rounds = 6;
  second.resume_path = path;
  auto d_second = replicas({"cuda:0"}, p.config);
  const TrainResult got = train(d_second, *comm, p.train, p.test, second);
  EXPECT_TRUE(got.resumed);
  EXPECT_EQ(got.rounds_done, 6);
  EXPECT_EQ(got.samples, want.samples);
  ASSERT_EQ(got.centre.size(), want.centre.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.centre.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(got.centre[i] - want.centre[i])));
    norm = std::max(norm, static_cast<double>(std::fabs(want.centre[i])));
  }
  EXPECT_LE(diff, 1e-3 * norm) << "max |resumed - uninterrupted| " << diff << " of " << norm;
  EXPECT_NEAR(got.final_metrics.p_at(1), want.final_metrics.p_at(1), 0.02);
  std::remove(path.c_str());
}

// Above 100,000 labels `auto` would shortlist on a CPU replica; next to a CUDA replica both
// train the full softmax, and the merged run trains.
TEST_F(GpuEngine, MixedRunAboveShortlistThresholdUsesOneObjective) {
  datasets::SyntheticSpec spec = datasets::with_rows(datasets::synthetic_preset("tiny"), 512, 128);
  spec.num_features = 1000;
  spec.num_labels = 120'000;
  test::EngineProblem p = test::make_problem(spec, {16}, OptimizerKind::kAdam, 7);
  p.config.output_layer = OutputLayer::kAuto;
  ASSERT_TRUE(p.config.uses_shortlist());
  auto devices = replicas({"cuda:0", "cpu:0"}, p.config);
  for (const auto& d : devices) {
    EXPECT_FALSE(d->config().uses_shortlist()) << d->name();
    EXPECT_EQ(d->config().output_layer, OutputLayer::kFull) << d->name();
  }
  auto comm = make_communicator(test::raw(devices));
  TrainOptions o;
  o.max_rounds = 2;
  o.max_epochs = 0.0;
  o.eval_every_rounds = 2;
  o.eval_max_points = 64;
  const TrainResult r = train(devices, *comm, p.train, p.test, o);
  EXPECT_EQ(r.rounds_done, 2);
  for (float v : r.centre) ASSERT_TRUE(std::isfinite(v));
}

// The selection itself needs no GPU: CPU-only sets keep `auto`, a CUDA device makes it the
// full softmax, an explicit shortlist next to a CUDA device is refused by name.
TEST(OneObjective, ResolvedFromTheDeviceSet) {
  ModelConfig c = test::fixed_model();
  c.num_features = 10;
  c.num_labels = 200'000;
  c.output_layer = OutputLayer::kAuto;
  const auto cpu_only = parse_device_list("cpu:0,cpu:1");
  EXPECT_EQ(resolve_output_layer(c, cpu_only).output_layer, OutputLayer::kAuto);
  EXPECT_TRUE(resolve_output_layer(c, cpu_only).uses_shortlist());
  const auto mixed = parse_device_list("cuda:0,cpu:0");
  EXPECT_EQ(resolve_output_layer(c, mixed).output_layer, OutputLayer::kFull);
  EXPECT_FALSE(resolve_output_layer(c, mixed).uses_shortlist());
  c.output_layer = OutputLayer::kShortlist;
  try {
    resolve_output_layer(c, mixed);
    FAIL() << "an explicit shortlist next to a CUDA device was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(resolve_output_layer(c, cpu_only).output_layer, OutputLayer::kShortlist);
}

}  // namespace
}  // namespace hetsgd
