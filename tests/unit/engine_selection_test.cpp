// Model selection on validation data (keep-best, patience), and runs that diverge.
#include "core/engine/selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "core/communicator.h"
#include "core/engine/checkpoint.h"
#include "core/engine/evaluation.h"
#include "core/engine/trainer.h"
#include "core/error.h"
#include "core/forwarding_device.h"
#include "core/param_layout.h"
#include "datasets/validation_split.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

TEST(EngineSelection, ValidationSplitIsDeterministicDisjointAndComplete) {
  test::EngineProblem p = test::small_problem(1000, 64);
  const auto [tr, val] = datasets::split_validation(p.train, 0.1, 7);
  EXPECT_EQ(val.rows(), 100);
  EXPECT_EQ(tr.rows() + val.rows(), p.train.rows());
  EXPECT_EQ(val.num_labels, p.train.num_labels);
  const auto [tr2, val2] = datasets::split_validation(p.train, 0.1, 7);
  EXPECT_EQ(val.x_indices, val2.x_indices);
  const auto [tr3, val3] = datasets::split_validation(p.train, 0.1, 8);
  EXPECT_NE(val.x_indices, val3.x_indices);
  EXPECT_EQ(tr.nnz() + val.nnz(), p.train.nnz());
  EXPECT_THROW(datasets::split_validation(p.train, 0.0, 1), InvalidArgument);
  EXPECT_THROW(datasets::split_validation(p.train, 0.9, 1), InvalidArgument);
}

// The saved model is the centre of the best validation evaluation, and the reported metrics
// are that evaluation's: validation P@1+P@3+P@5 is the curve's maximum, test metrics its
// companions.
TEST(EngineSelection, KeepBestReturnsTheBestValidationModelAndItsTestMetrics) {
  test::ValidatedRun v(2048, 256);
  TrainOptions o = test::every_round_options();  // wanders after the peak
  o.max_epochs = 12.0;
  const TrainResult r = v.run(o);
  ASSERT_TRUE(r.has_val);
  double best = -1.0;
  const EvalRecord* chosen = nullptr;
  for (const EvalRecord& e : r.evals) {
    ASSERT_TRUE(e.has_val);
    if (e.val_metrics.p135() > best) {
      best = e.val_metrics.p135();
      chosen = &e;
    }
  }
  ASSERT_NE(chosen, nullptr);
  EXPECT_TRUE(chosen->best);
  EXPECT_EQ(r.val_metrics.p135(), best);
  EXPECT_EQ(r.final_metrics.p_at(1), chosen->metrics.p_at(1));
  EXPECT_EQ(r.selected_round, chosen->round);
  // The returned model really is that centre: evaluated again it gives the same numbers.
  v.devices[0]->write_params(r.model.data());
  const RankingMetrics again = evaluate(*v.devices[0], v.val, o.eval_topk, o.eval_batch);
  EXPECT_EQ(again.p135(), best);
  // The test-set maximum stays a report: it may exceed the selected model's test P@1.
  EXPECT_GE(r.best_p1, r.final_metrics.p_at(1));
}

// The selector ranks evaluations by P@1+P@3+P@5, not by P@1: a later model whose top label is
// right a little less often but whose top 3 and 5 are better is the one kept, and patience
// counts from it.
TEST(EngineSelection, TheSelectedModelHasTheBestSumOfP1P3P5) {
  TrainOptions o;
  o.patience = 2;
  TrainState st;
  ModelSelector sel(o, &st);
  auto metrics = [](double p1, double p3, double p5) {
    RankingMetrics m;
    m.precision[0] = p1;
    m.precision[2] = p3;
    m.precision[4] = p5;
    return m;
  };
  const RankingMetrics test = metrics(0.5, 0.4, 0.3);
  EXPECT_TRUE(sel.offer({1.0f}, metrics(0.92, 0.60, 0.44), test, 10));
  EXPECT_TRUE(sel.offer({2.0f}, metrics(0.91, 0.63, 0.47), test, 20));   // lower P@1, higher sum
  EXPECT_FALSE(sel.offer({3.0f}, metrics(0.93, 0.59, 0.42), test, 30));  // higher P@1, lower sum
  EXPECT_FALSE(sel.out_of_patience());
  EXPECT_FALSE(sel.offer({4.0f}, metrics(0.91, 0.63, 0.47), test, 40));  // a tie keeps the earlier
  EXPECT_TRUE(sel.out_of_patience());
  EXPECT_EQ(st.best_round, 20);
  EXPECT_EQ(sel.take_model(), std::vector<float>{2.0f});
}

TEST(EngineSelection, PatienceStopsAfterThatManyEvaluationsWithoutImprovement) {
  test::ValidatedRun v(1024, 128);
  TrainOptions o = test::every_round_options();
  o.max_epochs = 500.0;
  o.patience = 2;
  const TrainResult r = v.run(o);
  EXPECT_EQ(r.stop, StopReason::kNoImprovement);
  EXPECT_LT(r.epochs, 500.0);
  ASSERT_GE(r.evals.size(), 3u);
  // The last two evaluations did not improve; the one before them (or earlier) was the best.
  EXPECT_FALSE(r.evals.back().best);
  EXPECT_FALSE(r.evals[r.evals.size() - 2].best);
  // Patience without validation data would be a decision on the test set: refused.
  TrainOptions no_val = o;
  EXPECT_THROW(
      train(test::raw(v.devices), *v.comm, TrainData{&v.train, &v.p.test, nullptr}, no_val),
      InvalidArgument);
}

// Automatic length and patience, the library's defaults: with validation data the run's
// epoch cap is raised to kAutoMinSamples samples and patience ends it; without, no patience
// and kDefaultEpochs epochs.
TEST(EngineSelection, AutoPatienceLetsValidationEndASmallSetsRun) {
  test::ValidatedRun v(1024, 128);
  TrainOptions o = test::every_round_options();
  ASSERT_EQ(o.max_epochs, kAutoEpochs);
  ASSERT_EQ(o.patience, kAutoPatience);
  const TrainResult r = v.run(o);
  EXPECT_EQ(r.stop, StopReason::kNoImprovement);
  EXPECT_LE(r.epochs, kAutoMinSamples / static_cast<double>(v.train.rows()) + 1.0);
  const TrainResult none =
      train(test::raw(v.devices), *v.comm, TrainData{&v.train, &v.p.test, nullptr}, o);
  EXPECT_EQ(none.stop, StopReason::kMaxEpochs);
  EXPECT_NEAR(none.epochs, kDefaultEpochs, 0.2);
}

// With --ema the moving average of the centre is the model: evaluated, selected and returned,
// while training continues from the centre itself.
TEST(EngineSelection, MovingAverageIsTheEvaluatedAndReturnedModel) {
  test::EngineProblem p = test::small_problem(1024, 128);
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  auto comm = make_host_communicator();
  TrainOptions o = test::every_round_options(0.01);
  o.max_rounds = 6;
  o.ema = 0.5;
  const TrainResult r = train(test::raw(devices), *comm, p.train, p.test, o);
  ASSERT_EQ(r.model.size(), r.centre.size());
  EXPECT_NE(r.model, r.centre);
  EXPECT_EQ(r.state.average, r.model);
  devices[0]->write_params(r.model.data());
  const RankingMetrics again = evaluate(*devices[0], p.test, o.eval_topk, o.eval_batch);
  EXPECT_EQ(again.p_at(1), r.final_metrics.p_at(1));
}

// Without keep_final_state (the command line's train and compare) a run returns the same
// selected model, metrics and device totals, but no centre, moments or replicas beside it.
TEST(EngineSelection, SummaryFinalStateKeepsTheModelAndDropsTheBuffers) {
  test::EngineProblem p = test::small_problem(1024, 128);
  // Adaptive on one device and sync: what each device trains does not depend on timing, so
  // two runs are equal.
  for (Algo algo : {Algo::kAdaptive, Algo::kSync}) {
    auto run = [&](bool keep) {
      auto devices = algo == Algo::kSync ? test::cpu_devices({"cpu:0", "cpu:1"}, p.config)
                                         : test::cpu_devices({"cpu:0"}, p.config);
      auto comm = make_host_communicator();
      TrainOptions o;
      o.algo = algo;
      o.lr0 = 0.01;
      o.max_rounds = 3;
      o.keep_final_state = keep;
      return train(test::raw(devices), *comm, p.train, p.test, o);
    };
    const TrainResult full = run(true), summary = run(false);
    EXPECT_EQ(summary.model, full.model) << to_string(algo);
    EXPECT_EQ(summary.final_metrics.p_at(1), full.final_metrics.p_at(1));
    EXPECT_TRUE(summary.centre.empty());
    EXPECT_TRUE(summary.state.centre.empty());
    const std::size_t k = algo == Algo::kSync ? 2 : 1;
    ASSERT_EQ(summary.state.slots.size(), k);
    ASSERT_EQ(full.state.slots.size(), k);
    EXPECT_FALSE(full.state.slots[0].optimizer.first.empty());
    for (std::size_t i = 0; i < k; ++i) {
      EXPECT_TRUE(summary.state.slots[i].optimizer.first.empty());
      EXPECT_EQ(summary.state.slots[i].updates, full.state.slots[i].updates);
      EXPECT_EQ(summary.devices[i].samples, full.devices[i].samples);
    }
  }
}

// An evaluation after which the run stops whatever it finds (here the only one, at the epoch
// limit) keeps no copy of a new best: the centre is returned as evaluated. The best-model file
// names a directory that does not exist, so any copy would fail the run.
TEST(EngineSelection, TheLastEvaluationsBestIsReturnedWithoutACopy) {
  test::ValidatedRun v(2048, 256);
  TrainOptions o = test::every_round_options();
  o.max_epochs = 1.0;
  o.eval_every_rounds = 1000000;  // one evaluation, at the end
  o.keep_final_state = false;
  o.best_model_file = ::testing::TempDir() + "no_such_dir/best.model";
  const TrainResult r = v.run(o);
  ASSERT_EQ(r.evals.size(), 1u);
  EXPECT_TRUE(r.evals.back().best);
  EXPECT_EQ(r.selected_round, r.evals.back().round);
  ASSERT_EQ(r.model.size(), static_cast<std::size_t>(ParamLayout(v.p.config).total()));
  std::vector<float> replica(r.model.size());
  v.devices[0]->read_params(replica.data());
  EXPECT_EQ(r.model, replica);  // the one device's replica is the centre it trained
  // With a checkpoint to write, the best is copied as before: here, into the missing folder.
  o.checkpoint_path = ::testing::TempDir() + "last_eval_" + std::to_string(::getpid()) + ".ckpt";
  v.devices = test::cpu_devices({"cpu:0"}, v.p.config);
  EXPECT_THROW(v.run(o), IoError);
  std::remove(o.checkpoint_path.c_str());
}

// TrainOptions::best_model_file keeps the best model on disk, not in memory: the same model
// is selected, checkpointed and resumed from, and the file is gone when the run ends.
TEST(EngineSelection, BestModelKeptInAFileIsTheSameModelAndTheFileIsRemoved) {
  test::EngineProblem p = test::small_problem(2048, 256);
  const auto [tr, val] = datasets::split_validation(p.train, 0.2, 3);
  const std::string dir = ::testing::TempDir() + "best_" + std::to_string(::getpid());
  const std::string file = dir + ".model", ckpt_mem = dir + "_mem.ckpt", ckpt_file = dir + ".ckpt";
  auto exists = [](const std::string& f) { return ::access(f.c_str(), F_OK) == 0; };
  auto run = [&](const std::string& best_file, const std::string& ckpt, double epochs,
                 const std::string& resume) {
    auto devices = test::cpu_devices({"cpu:0"}, p.config);
    auto comm = make_host_communicator();
    TrainOptions o;
    o.lr0 = 0.05;
    o.max_epochs = epochs;
    o.eval_every_rounds = 1;
    o.keep_final_state = false;
    o.best_model_file = best_file;
    o.checkpoint_path = ckpt;
    o.resume_path = resume;
    int improvements = 0;
    TrainCallbacks cb;
    cb.on_eval = [&](const EvalRecord& e) {
      if (!e.best) return;
      ++improvements;
      // The best model is on disk while the run goes on.
      EXPECT_EQ(exists(file), !best_file.empty());
    };
    TrainResult r =
        train(test::raw(devices), *comm, TrainData{&tr, &p.test, &val}, o, TrainState{}, cb);
    if (resume.empty()) {
      EXPECT_GE(improvements, 2);  // a later best overwrites the file in place
    }
    return r;
  };
  const TrainResult mem = run("", ckpt_mem, 4.0, "");
  const TrainResult disk = run(file, ckpt_file, 4.0, "");
  EXPECT_FALSE(exists(file));
  ASSERT_FALSE(disk.model.empty());
  EXPECT_EQ(disk.model, mem.model);
  EXPECT_EQ(disk.selected_round, mem.selected_round);
  // The checkpoint holds the best model either way.
  const TrainState saved = load_checkpoint(ckpt_file);
  EXPECT_EQ(saved.best_centre, load_checkpoint(ckpt_mem).best_centre);
  EXPECT_EQ(saved.best_centre, disk.model);
  // A resume moves the checkpoint's best model to the file (it stays the best here: these
  // resumed evaluations do not improve on it) and continues the same way.
  const TrainResult mem2 = run("", "", 8.0, ckpt_mem);
  const TrainResult disk2 = run(file, "", 8.0, ckpt_file);
  EXPECT_FALSE(exists(file));
  EXPECT_EQ(disk2.model, mem2.model);
  EXPECT_EQ(disk2.selected_round, mem2.selected_round);
  std::remove(ckpt_mem.c_str());
  std::remove(ckpt_file.c_str());
}

TEST(EngineSelection, ADivergedRunStopsAndKeepsTheLastGoodCheckpoint) {
  test::EngineProblem p = test::small_problem(1024, 128, OptimizerKind::kSgd);
  auto comm = make_host_communicator();
  const std::string path =
      ::testing::TempDir() + "engine_nan_" + std::to_string(::getpid()) + ".ckpt";
  TrainOptions good;
  good.max_rounds = 2;
  good.checkpoint_path = path;
  auto d1 = test::cpu_devices({"cpu:0"}, p.config);
  train(test::raw(d1), *comm, p.train, p.test, good);
  const TrainState saved = load_checkpoint(path);

  TrainOptions bad = good;
  bad.lr0 = 1e30;
  bad.warmup_epochs = 0.0;
  bad.max_rounds = 20;
  bad.checkpoint_every_rounds = 1;
  auto d2 = test::cpu_devices({"cpu:0"}, p.config);
  try {
    train(test::raw(d2), *comm, p.train, p.test, bad);
    FAIL() << "a diverging run finished";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("round"), std::string::npos) << e.what();
  }
  // The file on disk is still a valid, finite checkpoint.
  const TrainState after = load_checkpoint(path);
  EXPECT_EQ(after.param_count, saved.param_count);
  std::remove(path.c_str());
}

// A signal during an evaluation is answered within one chunk: the pass stops before the next
// chunk and its metrics cover the rows scored so far.
TEST(EngineSelection, AStopEndsAnEvaluationAfterTheChunkInFlight) {
  test::EngineProblem p = test::small_problem(256, 512);
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  std::atomic<bool> stop{false};
  // Sets the stop flag while scoring the first chunk, as a signal handler would.
  struct Signalling : ForwardingDevice {
    Signalling(std::unique_ptr<Device> inner, std::atomic<bool>* flag)
        : ForwardingDevice(std::move(inner)), flag_(flag) {}
    float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override {
      flag_->store(true);
      return ForwardingDevice::predict_topk(batch, k, labels, scores);
    }
    std::atomic<bool>* flag_;
  };
  Signalling d(std::move(devices[0]), &stop);
  EXPECT_EQ(evaluate(d, p.test, 5, 64, 0, nullptr, &stop).rows, 64);
  EXPECT_EQ(evaluate(d, p.test, 5, 64, 0, nullptr, nullptr).rows, 512);
}

// An interrupted run does not start the final pass over the test set: the selected model's
// sampled metrics stand, and final_eval_rows says how many rows they cover.
TEST(EngineSelection, AnInterruptedRunKeepsTheSampledMetricsInsteadOfTheFinalPass) {
  test::EngineProblem p = test::small_problem(1024, 512);
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  auto comm = make_host_communicator();
  TrainOptions o;
  o.max_epochs = 1.0;
  o.eval_max_points = 100;  // in-training evaluations score 100 of the 512 test rows
  const TrainResult full =
      train(test::raw(devices), *comm, TrainData{&p.train, &p.test, nullptr}, o);
  EXPECT_EQ(full.final_eval_rows, 512);
  std::atomic<bool> stop{true};
  TrainCallbacks cb;
  cb.stop = &stop;
  auto again = test::cpu_devices({"cpu:0"}, p.config);
  const TrainResult cut =
      train(test::raw(again), *comm, TrainData{&p.train, &p.test, nullptr}, o, {}, cb);
  EXPECT_EQ(cut.stop, StopReason::kInterrupted);
  ASSERT_FALSE(cut.evals.empty());
  EXPECT_EQ(cut.final_eval_rows, 100);
  EXPECT_EQ(cut.final_metrics.rows, 100);
  EXPECT_EQ(cut.final_metrics.p_at(1), cut.evals.back().metrics.p_at(1));
}

}  // namespace
}  // namespace hetsgd

namespace hetsgd {
namespace {

// In-training evaluations of a sampled test set cost the same whatever the round: the period
// is lengthened so that they take at most kEvalShare of the training, both costs estimated in
// flops, so a deterministic run and a free one evaluate the same rounds.
TEST(EngineSelection, SampledEvaluationsArePacedToAShareOfTheTrainingTime) {
  datasets::SyntheticSpec spec =
      datasets::with_rows(datasets::synthetic_preset("tiny"), 2048, 2048);
  spec.num_features = 2000;
  spec.num_labels = 20000;  // scoring 2,000 rows costs about seven rounds of training
  const test::EngineProblem p = test::make_problem(spec, {32}, OptimizerKind::kAdam, 5);
  auto evaluations = [&](bool deterministic) {
    auto devices = test::cpu_devices({"cpu:0"}, p.config);
    auto comm = make_host_communicator();
    TrainOptions o;
    o.max_epochs = 4.0;
    o.round_samples = 64;  // one batch a round: 128 rounds
    o.b0 = 64;
    o.eval_max_points = 2000;  // a sample of the 2,048 test rows
    o.deterministic = deterministic;
    return train(test::raw(devices), *comm, TrainData{&p.train, &p.test, nullptr}, o).evals;
  };
  const std::vector<EvalRecord> fixed = evaluations(true);
  const std::vector<EvalRecord> paced = evaluations(false);
  ASSERT_GE(paced.size(), 1u);  // the end of the run's at least
  // Not every 2,048 / (2 x 64) = 16 rounds: scoring 2,000 rows costs about ten rounds of
  // training, so about 10 / 0.08 rounds pass between evaluations.
  EXPECT_LE(paced.size(), 4u);
  EXPECT_GT(paced[0].round, 32);
  ASSERT_EQ(fixed.size(), paced.size());
  for (size_t i = 0; i < paced.size(); ++i) EXPECT_EQ(fixed[i].round, paced[i].round) << i;
}

}  // namespace
}  // namespace hetsgd
