/// \file tests/unit/engine_test_support.h
/// Small problems and real CPU devices for the engine tests.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/emulated_device.h"
#include "core/engine/train_options.h"
#include "core/engine/trainer.h"
#include "core/forwarding_device.h"
#include "core/model_config.h"
#include "datasets/synthetic.h"
#include "datasets/validation_split.h"
#include "kernels/registry.h"

namespace hetsgd::test {

/// A synthetic train/test pair and a model shaped for it.
struct EngineProblem {
  Dataset train;
  Dataset test;
  ModelConfig config;
};

/// Generates `spec` with `seed` and a model of the given hidden widths for it.
inline EngineProblem make_problem(const datasets::SyntheticSpec& spec,
                                  const std::vector<index_t>& hidden, OptimizerKind optimizer,
                                  std::uint64_t seed) {
  EngineProblem p;
  auto data = datasets::generate_synthetic(spec, seed);
  p.train = std::move(data.first);
  p.test = std::move(data.second);
  p.config.num_features = spec.num_features;
  p.config.num_labels = spec.num_labels;
  p.config.hidden = hidden;
  p.config.optimizer.kind = optimizer;
  p.config.seed = 3;
  return p;
}

/// A small learnable problem: `train_rows` x 256 features, 32 labels; model 256 -> 32 -> 32.
/// A step on it takes well under a millisecond: for logic, not for timing.
inline EngineProblem small_problem(index_t train_rows = 2048, index_t test_rows = 512,
                                   OptimizerKind optimizer = OptimizerKind::kAdam,
                                   std::uint64_t seed = 5) {
  datasets::SyntheticSpec spec =
      datasets::with_rows(datasets::synthetic_preset("tiny"), train_rows, test_rows);
  return make_problem(spec, {32}, optimizer, seed);
}

/// A problem whose steps take milliseconds (1000 labels, hidden 128), so that emulated speed
/// ratios dominate scheduling noise.
inline EngineProblem timing_problem(index_t train_rows = 4096, index_t test_rows = 256) {
  datasets::SyntheticSpec spec =
      datasets::with_rows(datasets::synthetic_preset("tiny"), train_rows, test_rows);
  spec.num_features = 2000;
  spec.num_labels = 1000;
  return make_problem(spec, {128}, OptimizerKind::kAdam, 9);
}

/// Options for short adaptive runs on small problems: lr 2e-3 at batch 64, batch sizes within
/// 16..512, no warm-up, only the final evaluation and no epoch limit (each test sets its stop).
inline TrainOptions quick_options() {
  TrainOptions o;
  o.lr0 = 2e-3;
  o.b0 = 64;
  o.b_min = 16;
  o.b_max = 512;
  o.warmup_epochs = 0.0;
  o.eval_at_start = false;
  o.eval_every_rounds = 1000;  // only the final evaluation
  o.max_epochs = 0.0;
  return o;
}

/// Real CPU devices (one thread each: the test machine is small and shared), e.g.
/// {"cpu:0", "cpu:1@0.33"}; a speed factor wraps the device in the emulation decorator.
inline std::vector<std::unique_ptr<Device>> cpu_devices(const std::vector<std::string>& ids,
                                                        const ModelConfig& config) {
  DeviceOptions opts;
  opts.threads = 1;
  std::vector<std::unique_ptr<Device>> out;
  for (const std::string& id : ids) out.push_back(make_device(parse_device_id(id), config, opts));
  return out;
}

/// The devices as the engine takes them (borrowed pointers).
inline std::vector<Device*> raw(const std::vector<std::unique_ptr<Device>>& devices) {
  std::vector<Device*> out;
  for (const auto& d : devices) out.push_back(d.get());
  return out;
}

/// Test-only decorator for scheduling tests that need controlled timing: the wrapped real
/// device still computes, then sleeps `per_row` per batch row, so a step's duration is
/// dominated by a cost linear in the batch size (as on a large model) instead of by the
/// scheduling noise of a loaded 2-core test machine. Everything else is forwarded.
class LinearCostDevice final : public ForwardingDevice {
 public:
  LinearCostDevice(std::unique_ptr<Device> inner, std::chrono::microseconds per_row)
      : ForwardingDevice(std::move(inner)), per_row_(per_row) {}
  std::string name() const override { return inner().name() + " (linear cost)"; }
  float train_step(const CsrBatch& b, float lr) override {
    const float loss = inner().train_step(b, lr);
    std::this_thread::sleep_for(per_row_ * b.rows());
    return loss;
  }
  float gradient(const CsrBatch& b, float scale) override {
    const float loss = inner().gradient(b, scale);
    std::this_thread::sleep_for(per_row_ * b.rows());
    return loss;
  }

 private:
  std::chrono::microseconds per_row_;
};

/// Real CPU devices whose steps cost `per_row` per batch row, then slowed to `speeds[i]` by
/// the emulation decorator (speed 1 = not slowed).
inline std::vector<std::unique_ptr<Device>> linear_cost_devices(
    const std::vector<double>& speeds, const ModelConfig& config,
    std::chrono::microseconds per_row = std::chrono::microseconds(100)) {
  DeviceOptions opts;
  opts.threads = 1;
  std::vector<std::unique_ptr<Device>> out;
  for (size_t i = 0; i < speeds.size(); ++i) {
    auto real = make_device(DeviceId::cpu(static_cast<int>(i)), config, opts);
    out.push_back(make_emulated_device(std::make_unique<LinearCostDevice>(std::move(real), per_row),
                                       speeds[i]));
  }
  return out;
}

/// Options that evaluate after every round at learning rate `lr0`; 0.05 is large enough that
/// small_problem()'s validation curve peaks and then wanders within a few epochs.
inline TrainOptions every_round_options(double lr0 = 0.05) {
  TrainOptions o;
  o.lr0 = lr0;
  o.eval_every_rounds = 1;
  return o;
}

/// small_problem(train_rows, test_rows) with a fifth of its training rows held out for
/// validation (split seed 3), one CPU device and a host communicator to train them with.
struct ValidatedRun {
  ValidatedRun(index_t train_rows, index_t test_rows) : p(small_problem(train_rows, test_rows)) {
    std::tie(train, val) = datasets::split_validation(p.train, 0.2, 3);
  }
  /// Trains the device on `train`, selecting on `val`, reporting on the test set.
  TrainResult run(const TrainOptions& o) {
    return hetsgd::train(raw(devices), *comm, TrainData{&train, &p.test, &val}, o);
  }
  EngineProblem p;
  Dataset train, val;
  std::vector<std::unique_ptr<Device>> devices = cpu_devices({"cpu:0"}, p.config);
  std::unique_ptr<Communicator> comm = make_host_communicator();
};

}  // namespace hetsgd::test
