/// \file tests/unit/engine_test_support.h
/// Small problems and real CPU devices for the engine tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/emulated_device.h"
#include "core/engine/compare.h"
#include "core/engine/train_options.h"
#include "core/engine/trainer.h"
#include "core/engine/training_job.h"
#include "core/forwarding_device.h"
#include "core/model_config.h"
#include "datasets/synthetic.h"
#include "datasets/validation_split.h"
#include "kernels/registry.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {

/// A synthetic train/test pair and a model shaped for it.
struct EngineProblem {
  Dataset train;
  Dataset test;
  ModelConfig config = test::fixed_model();
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

/// Options for short adaptive runs on small problems: lr 2e-3 at batch 64, batch sizes within
/// 16..512, no warm-up, only the final evaluation and no epoch limit (each test sets its stop).
inline TrainOptions quick_options() {
  TrainOptions o;
  o.lr0 = 2e-3;
  o.lambda = 0.0;  // a constant rate: tests derive each step's rate from lr0
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

/// A tenant job's device maker (core/engine/training_job.h): real CPU devices of the ids.
inline DeviceMaker cpu_maker() {
  return [](const std::vector<DeviceId>& ids, const ModelConfig& config, const TrainOptions&) {
    std::vector<std::string> names;
    for (const DeviceId& id : ids) names.push_back(id.str());
    return cpu_devices(names, config);
  };
}

// Ends a job's round after a number of training steps instead of seconds: the replicas count
// their steps here and the flag (the job's stop flag) is raised at the last one, so the run
// stops at that batch boundary whatever the machine's load.
class StepBudget {
 public:
  void reset(int steps) {
    left_ = steps;
    stop_ = false;
  }
  void step() {
    if (--left_ <= 0) stop_ = true;
  }
  const std::atomic<bool>* flag() const { return &stop_; }

 private:
  std::atomic<int> left_{0};
  std::atomic<bool> stop_{false};
};

class CountedDevice final : public ForwardingDevice {
 public:
  CountedDevice(std::unique_ptr<Device> inner, StepBudget* budget)
      : ForwardingDevice(std::move(inner)), budget_(budget) {}
  float train_step(const CsrBatch& b, float lr) override {
    const float loss = inner().train_step(b, lr);
    budget_->step();
    return loss;
  }

 private:
  StepBudget* budget_;
};

inline DeviceMaker counted_maker(StepBudget* budget) {
  return [budget](const std::vector<DeviceId>& ids, const ModelConfig& config,
                  const TrainOptions& options) {
    std::vector<std::unique_ptr<Device>> out;
    for (auto& d : cpu_maker()(ids, config, options)) {
      out.push_back(std::make_unique<CountedDevice>(std::move(d), budget));
    }
    return out;
  };
}

/// The devices as the engine takes them (borrowed pointers).
inline std::vector<Device*> raw(const std::vector<std::unique_ptr<Device>>& devices) {
  std::vector<Device*> out;
  for (const auto& d : devices) out.push_back(d.get());
  return out;
}

/// Holds one device of a pair until the other has trained the rest of the round, so that a
/// test of dynamic scheduling does not depend on the threads' timing: the held device's step
/// waits until the free device's completed points and the held device's own reach the round's
/// quota S (all the free device could take), and the test calls next_round() between rounds
/// (GatedPair::callbacks). A wait longer than `bound` gives up and is reported by timed_out().
class RoundGate {
 public:
  explicit RoundGate(index_t round_samples, std::chrono::seconds bound = std::chrono::seconds(60))
      : quota_(round_samples), bound_(bound) {}
  void free_done(index_t rows) {
    std::lock_guard<std::mutex> lock(m_);
    free_ += rows;
    cv_.notify_all();
  }
  void hold(index_t rows) {
    std::unique_lock<std::mutex> lock(m_);
    held_ += rows;
    if (!cv_.wait_for(lock, bound_, [&] { return free_ + held_ >= quota_; })) timed_out_ = true;
  }
  void next_round() {
    std::lock_guard<std::mutex> lock(m_);
    free_ = held_ = 0;
  }
  bool timed_out() const {
    std::lock_guard<std::mutex> lock(m_);
    return timed_out_;
  }

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  index_t quota_, free_ = 0, held_ = 0;
  std::chrono::seconds bound_;
  bool timed_out_ = false;
};

/// A device whose training steps report to (free) or wait on (held) a RoundGate.
class GatedDevice final : public ForwardingDevice {
 public:
  GatedDevice(std::unique_ptr<Device> inner, std::shared_ptr<RoundGate> gate, bool held)
      : ForwardingDevice(std::move(inner)), gate_(std::move(gate)), held_(held) {}
  float train_step(const CsrBatch& b, float lr) override {
    if (held_) gate_->hold(b.rows());
    const float loss = inner().train_step(b, lr);
    if (!held_) gate_->free_done(b.rows());
    return loss;
  }

 private:
  std::shared_ptr<RoundGate> gate_;
  bool held_;
};

/// cpu:0 (free) and cpu:1 (held) on one RoundGate of quota `round_samples`.
struct GatedPair {
  GatedPair(const ModelConfig& config, index_t round_samples)
      : gate(std::make_shared<RoundGate>(round_samples)) {
    DeviceOptions opts;
    opts.threads = 1;
    for (int i = 0; i < 2; ++i) {
      devices.push_back(
          std::make_unique<GatedDevice>(make_device(DeviceId::cpu(i), config, opts), gate, i == 1));
    }
  }
  /// Callbacks that open the next round's gate.
  TrainCallbacks callbacks() const {
    TrainCallbacks cb;
    cb.on_round = [g = gate](const RoundRecord&) { g->next_round(); };
    return cb;
  }
  std::shared_ptr<RoundGate> gate;
  std::vector<std::unique_ptr<Device>> devices;
};

/// small_problem(4096, 256) trained by a GatedPair with `o` for `rounds` rounds of 2048
/// samples; a held device that waited past the gate's bound fails the test.
inline TrainResult train_gated_pair(TrainOptions o, index_t rounds) {
  const EngineProblem p = small_problem(4096, 256);
  o.round_samples = 2048;
  o.max_rounds = rounds;
  GatedPair pair(p.config, o.round_samples);
  auto comm = make_host_communicator();
  TrainResult r = train(pair.devices, *comm, p.train, p.test, o, pair.callbacks());
  EXPECT_FALSE(pair.gate->timed_out()) << "the held device waited past the test's bound";
  return r;
}

/// A comparison of `algos` on `config` at lr 1e-2 and batch 64 (a rate at which
/// small_problem() learns within a few epochs), `epochs` epochs long, evaluating every
/// `eval_every_rounds` rounds.
inline CompareOptions compare_options(const ModelConfig& config, std::vector<Algo> algos,
                                      double epochs, int eval_every_rounds) {
  CompareOptions c;
  c.config = config;
  c.algos = std::move(algos);
  c.base.lr0 = 1e-2;
  c.base.b0 = 64;
  c.base.max_epochs = epochs;
  c.base.eval_every_rounds = eval_every_rounds;
  return c;
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
