// The final evaluation through the label index (core/engine/evaluation.h): every test row
// ranked among the head labels and the labels of its best k-means label clusters, built from
// the evaluated weights and scored exactly, with the recall against exact scoring measured on
// the in-training sample's rows.
#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "core/communicator.h"
#include "core/engine/calibrate.h"
#include "core/engine/evaluation.h"
#include "core/engine/trainer.h"
#include "core/forwarding_device.h"
#include "kernels/cpu/api.h"
#include "kernels/replicas.h"
#include "tests/unit/engine_test_support.h"

namespace hetsgd {
namespace {

// 3,000 labels, shortlisted with hard negatives from an index rebuilt every 20 steps (waited
// for, so the run is deterministic).
test::EngineProblem shortlisted_problem() {
  datasets::SyntheticSpec spec = datasets::with_rows(datasets::synthetic_preset("tiny"), 3000, 600);
  spec.num_features = 2000;
  spec.num_labels = 3000;
  test::EngineProblem p = test::make_problem(spec, {32}, OptimizerKind::kAdam, 7);
  p.config.output_layer = OutputLayer::kShortlist;
  p.config.shortlist.hard_negatives = 10;
  p.config.shortlist.sampled_negatives = 64;
  p.config.shortlist.rebuild_steps = 20;
  p.config.shortlist.wait_for_index = true;
  return p;
}

// A search that returns labels 0..k-1 for every row, whatever it holds.
void first_labels(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  for (index_t r = 0; r < batch.rows(); ++r) {
    for (int i = 0; i < k; ++i) {
      labels[r * k + i] = i;
      scores[r * k + i] = static_cast<float>(-i);
    }
  }
}

TrainOptions options() {
  TrainOptions o;
  o.max_epochs = 2.0;
  o.lr0 = 4e-3;
  o.eval_max_points = 100;   // the in-training sample, and the rows the recall is measured on
  o.final_eval_flops = 1.0;  // exact scoring of the whole test set is beyond the budget
  return o;
}

// A run of `o` on a fresh CPU device of `p` whose final evaluation may search through
// `topk` (none: scored exactly); the device stays for the checks that follow.
struct SearchedRun {
  std::vector<std::unique_ptr<Device>> devices;
  TrainResult r;
};
SearchedRun train_searching(const test::EngineProblem& p, IndexedTopk topk,
                            const TrainOptions& o = options()) {
  auto comm = make_host_communicator();
  TrainCallbacks cb;
  cb.indexed_topk = std::move(topk);
  SearchedRun run;
  run.devices = test::cpu_devices({"cpu:0"}, p.config);
  run.r = train(test::raw(run.devices), *comm, TrainData{&p.train, &p.test, nullptr}, o, {}, cb);
  return run;
}

// `answer` as a search of levels 0..last (none above) that counts its calls by level in
// `calls`.
IndexedTopk counted_levels(int last, std::vector<int>& calls, IndexedTopk answer) {
  calls.assign(static_cast<std::size_t>(last + 1), 0);
  return [&calls, last, answer](Device& d, const CsrBatch& batch, int k, int level, col_t* labels,
                                float* scores) {
    if (level > last) return false;
    ++calls[static_cast<std::size_t>(level)];
    return answer(d, batch, k, level, labels, scores);
  };
}

TEST(IndexedEvaluation, TheFinalPassRanksEveryRowThroughTheIndexAndReportsItsRecall) {
  test::EngineProblem p = shortlisted_problem();
  const TrainOptions o = options();
  const SearchedRun run = train_searching(p, indexed_topk, o);
  const TrainResult& r = run.r;
  EXPECT_TRUE(r.final_indexed);
  EXPECT_EQ(r.final_eval_rows, p.test.rows());
  EXPECT_EQ(r.final_metrics.rows, p.test.rows());
  ASSERT_EQ(r.index_recall.rows, 100);
  EXPECT_EQ(r.exact_sample.rows, 100);
  // The 8,192-label head holds all 3,000 labels: the ranking is the exact one.
  for (int k : {1, 3, 5}) EXPECT_DOUBLE_EQ(r.index_recall.at_k(k), 1.0) << "recall@" << k;
  run.devices[0]->write_params(r.model.data());
  const RankingMetrics exact = evaluate(*run.devices[0], p.test, 5, 512);
  for (int k : {1, 3, 5}) EXPECT_NEAR(r.final_metrics.p_at(k), exact.p_at(k), 0.005) << k;

  // Without the hook the budget's rows are scored exactly; --exact-eval scores every row.
  const TrainResult sampled = train_searching(p, nullptr, o).r;
  EXPECT_EQ(sampled.final_eval_rows, 100);
  EXPECT_EQ(sampled.index_recall.rows, 0);
  TrainOptions exact_opts = o;
  exact_opts.exact_eval = true;
  const TrainResult whole = train_searching(p, indexed_topk, exact_opts).r;
  EXPECT_EQ(whole.final_eval_rows, p.test.rows());
  EXPECT_EQ(whole.index_recall.rows, 0);
  for (int k : {1, 3, 5}) EXPECT_NEAR(whole.final_metrics.p_at(k), exact.p_at(k), 1e-12) << k;
}

// A final evaluation left to calibration (run_pipeline's defer_final_eval) runs the trainer's
// plan there: a tail prior is in the bias, which the search ranks by, so every test row of the
// saved model is ranked through it, its recall measured on the model with the prior.
TEST(IndexedEvaluation, ADeferredPassRanksTheCalibratedModelThroughTheIndex) {
  test::EngineProblem p = shortlisted_problem();
  TrainOptions o = options();
  o.defer_final_eval = true;
  SearchedRun run = train_searching(p, indexed_topk, o);
  TrainResult& r = run.r;
  ASSERT_TRUE(r.final_eval_deferred);
  EXPECT_FALSE(r.final_indexed);
  CalibrationOptions co;
  co.forest = 0.0;
  co.tail_weight = 0.5;  // given: changes the model without validation rows
  calibrate(co, p.config, o, {&p.train, nullptr, &p.test, indexed_topk}, *run.devices[0], &r,
            nullptr);
  EXPECT_FALSE(r.final_eval_deferred);
  EXPECT_TRUE(r.final_indexed);
  EXPECT_EQ(r.final_eval_rows, p.test.rows());
  EXPECT_EQ(r.final_metrics.rows, p.test.rows());
  EXPECT_EQ(r.index_recall.rows, 100);
  // The saved model (its bias holding the prior), scored exactly on every row.
  run.devices[0]->write_params(r.model.data());
  const std::vector<float> inv = run_propensities(o, p.train);
  const RankingMetrics exact = evaluate(*run.devices[0], p.test, 5, 512, 0, &inv);
  for (int k : {1, 3, 5}) EXPECT_NEAR(r.final_metrics.p_at(k), exact.p_at(k), 0.005) << k;
}

// A search whose recall on the exact rows is below kUsableIndexRecall at every level is not
// used: the final budget's rows are scored exactly, and the recall found is reported.
TEST(IndexedEvaluation, ASearchBelowTheRecallBoundIsNotUsed) {
  test::EngineProblem p = shortlisted_problem();
  int calls = 0;
  const SearchedRun run = train_searching(
      p, [&](Device&, const CsrBatch& batch, int k, int, col_t* labels, float* scores) {
        ++calls;
        first_labels(batch, k, labels, scores);
        return true;
      });
  const TrainResult& r = run.r;
  Device& device = *run.devices[0];
  EXPECT_FALSE(r.final_indexed);
  // The 100 exact rows' chunk at every level tried: the other rows are not searched.
  EXPECT_EQ(calls, kMaxIndexLevels);
  EXPECT_EQ(r.final_eval_rows, 100);
  EXPECT_EQ(r.final_metrics.rows, 100);
  ASSERT_EQ(r.index_recall.rows, 100);
  EXPECT_LT(r.index_recall.at_k(1), kUsableIndexRecall);
  device.write_params(r.model.data());
  EXPECT_DOUBLE_EQ(r.final_metrics.p_at(1), evaluate(device, p.test, 5, 512, 100).p_at(1));
}

// Counts the rows its wrapped device scores exactly (predict_topk).
class CountingDevice final : public ForwardingDevice {
 public:
  explicit CountingDevice(std::unique_ptr<Device> inner)
      : ForwardingDevice(std::move(inner)), plain_(&ForwardingDevice::inner()) {}
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override {
    rows_ += batch.rows();
    return ForwardingDevice::predict_topk(batch, k, labels, scores);
  }
  Device& plain() { return *plain_; }  // the wrapped device, uncounted
  index_t rows() const { return rows_; }

 private:
  Device* plain_;
  index_t rows_ = 0;
};

// The recall is measured against the exact top-k of the in-training sample's rows, which the
// last evaluation of the selected model has just computed: they are not scored again.
TEST(IndexedEvaluation, TheSampleTheRunScoredExactlyIsNotScoredAgain) {
  test::EngineProblem p = shortlisted_problem();
  auto comm = make_host_communicator();
  TrainCallbacks cb;
  // An exact search through the uncounted device: the counted rows are the evaluations'.
  cb.indexed_topk = [](Device& d, const CsrBatch& batch, int k, int, col_t* labels, float* scores) {
    static_cast<CountingDevice&>(d).plain().predict_topk(batch, k, labels, scores);
    return true;
  };
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  auto counting = std::make_unique<CountingDevice>(std::move(devices[0]));
  CountingDevice& d = *counting;
  const TrainResult r =
      train({counting.get()}, *comm, TrainData{&p.train, &p.test, nullptr}, options(), {}, cb);
  ASSERT_TRUE(r.final_indexed);
  ASSERT_FALSE(r.evals.empty());
  // 100-row test samples, nothing else (the pacing is planned in flops, not probed).
  EXPECT_EQ(d.rows(), static_cast<index_t>(r.evals.size()) * 100);
  // The reused lists are the selected model's: the exact sample's metrics are its own.
  EXPECT_DOUBLE_EQ(r.exact_sample.p_at(1), r.evals.back().metrics.p_at(1));
  d.write_params(r.model.data());
  const RankingMetrics sample = evaluate(d.plain(), p.test, 5, 512, 100);
  for (int k : {1, 3, 5}) EXPECT_DOUBLE_EQ(r.exact_sample.p_at(k), sample.p_at(k)) << k;
  for (int k : {1, 3, 5}) EXPECT_DOUBLE_EQ(r.index_recall.at_k(k), 1.0) << "recall@" << k;
}

// Given exact lists are used as they are: wrong ones make the recall fail.
TEST(IndexedEvaluation, GivenExactListsAreTheOnesTheRecallIsMeasuredAgainst) {
  test::EngineProblem p = shortlisted_problem();
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  Device& d = *devices[0];
  IndexedEval indexed;
  indexed.topk = [](Device& dev, const CsrBatch& batch, int k, int level, col_t* labels,
                    float* scores) {
    if (level > 0) return false;
    dev.predict_topk(batch, k, labels, scores);
    return true;
  };
  indexed.exact_rows = 100;
  std::vector<col_t> exact;
  indexed.exact = evaluate(d, p.test, 5, 512, 100, nullptr, nullptr, &exact);
  ASSERT_EQ(exact.size(), 500u);
  IndexedEval right = indexed;
  right.exact_topk = exact;
  RankingMetrics m;
  ASSERT_TRUE(evaluate_indexed(d, p.test, 5, 512, &right, &m));
  EXPECT_DOUBLE_EQ(right.recall.at_k(1), 1.0);
  EXPECT_NEAR(m.p_at(1), evaluate(d, p.test, 5, 512).p_at(1), 1e-12);
  IndexedEval wrong = indexed;
  wrong.exact_topk.resize(500);
  for (std::size_t i = 0; i < 500; ++i) wrong.exact_topk[i] = static_cast<col_t>(2999 - i % 5);
  EXPECT_FALSE(evaluate_indexed(d, p.test, 5, 512, &wrong, &m));
  EXPECT_LT(wrong.recall.at_k(1), kMinIndexRecall);
}

// Levels are tried from the cheapest up: the first whose recall reaches the bound ranks every
// row, and no higher level is asked for.
TEST(IndexedEvaluation, TheCheapestLevelThatReachesTheBoundRanksEveryRow) {
  test::EngineProblem p = shortlisted_problem();
  std::vector<int> calls;
  // Level 0 returns labels 0..k-1 whatever the row; level 1 the exact top-k; level 2 is wrong.
  const SearchedRun run = train_searching(
      p, counted_levels(
             2, calls,
             [](Device& d, const CsrBatch& batch, int k, int level, col_t* labels, float* scores) {
               if (level == 1) {
                 d.predict_topk(batch, k, labels, scores);
               } else {
                 first_labels(batch, k, labels, scores);
               }
               return true;
             }));
  const TrainResult& r = run.r;
  EXPECT_TRUE(r.final_indexed);
  EXPECT_EQ(r.final_eval_rows, p.test.rows());
  EXPECT_EQ(calls[0], 1);
  EXPECT_GE(calls[1], 2);  // the exact rows, then the rest
  EXPECT_EQ(calls[2], 0);
  for (int k : {1, 3, 5}) EXPECT_DOUBLE_EQ(r.index_recall.at_k(k), 1.0) << "recall@" << k;
  run.devices[0]->write_params(r.model.data());
  const RankingMetrics exact = evaluate(*run.devices[0], p.test, 5, 512);
  for (int k : {1, 3, 5}) EXPECT_NEAR(r.final_metrics.p_at(k), exact.p_at(k), 1e-12) << k;
}

// When no level reaches kMinIndexRecall, the one with the highest recall ranks every row if
// that recall is usable: the whole test set is ranked, not a sample, and the recall and the
// exact rows' exact metrics are reported beside.
TEST(IndexedEvaluation, BelowTheBoundTheBestUsableLevelRanksEveryRow) {
  test::EngineProblem p = shortlisted_problem();
  std::vector<int> calls;
  // Level 0: the exact top-k but for every tenth row of a call (labels 0..k-1 there), a recall
  // near 0.9; level 1: labels 0..k-1 for every row; level 2 does not exist.
  const IndexedTopk topk = counted_levels(
      1, calls,
      [](Device& d, const CsrBatch& batch, int k, int level, col_t* labels, float* scores) {
        first_labels(batch, k, labels, scores);
        if (level == 1) return true;
        std::vector<col_t> exact(static_cast<std::size_t>(batch.rows() * k));
        std::vector<float> exact_s(exact.size());
        d.predict_topk(batch, k, exact.data(), exact_s.data());
        for (index_t r = 0; r < batch.rows(); ++r) {
          if (r % 10 == 0) continue;
          for (int i = 0; i < k; ++i) {
            labels[r * k + i] = exact[static_cast<std::size_t>(r * k + i)];
            scores[r * k + i] = exact_s[static_cast<std::size_t>(r * k + i)];
          }
        }
        return true;
      });
  const SearchedRun run = train_searching(p, topk);
  const TrainResult& r = run.r;
  Device& device = *run.devices[0];
  ASSERT_TRUE(r.final_indexed);
  EXPECT_EQ(r.index_level, 0);
  EXPECT_GE(calls[0], 2);  // the exact rows, then the rest at level 0
  EXPECT_EQ(calls[1], 1);  // the exact rows only
  EXPECT_EQ(r.final_eval_rows, p.test.rows());
  EXPECT_EQ(r.final_metrics.rows, p.test.rows());
  ASSERT_EQ(r.index_recall.rows, 100);
  EXPECT_GE(r.index_recall.at_k(1), kUsableIndexRecall);
  EXPECT_LT(r.index_recall.at_k(1), kMinIndexRecall);
  // The exact rows' exact metrics are there, and the ranked ones are what that search gives.
  device.write_params(r.model.data());
  const RankingMetrics sample = evaluate(device, p.test, 5, 512, 100);
  EXPECT_DOUBLE_EQ(r.exact_sample.p_at(1), sample.p_at(1));
  EXPECT_EQ(r.exact_sample.rows, 100);
  IndexedEval again;
  again.topk = topk;
  again.exact_rows = 100;
  RankingMetrics m;
  ASSERT_TRUE(evaluate_indexed(device, p.test, 5, 512, &again, &m));
  EXPECT_EQ(again.level, 0);
  EXPECT_NEAR(m.p_at(1), r.final_metrics.p_at(1), 1e-12);
}

// Below the head, the clusters carry the ranking: a trained replica, with a head smaller than
// L or none, still finds most of the exact top-5, and every label it returns is scored exactly.
TEST(IndexedEvaluation, TheClustersFindMostOfTheExactTopKWithASmallHeadOrNone) {
  test::EngineProblem p = shortlisted_problem();
  auto comm = make_host_communicator();
  TrainOptions o = options();
  o.final_eval_flops = 1e18;  // exact final pass: this test asks the device itself
  auto devices = test::cpu_devices({"cpu:0"}, p.config);
  train(test::raw(devices), *comm, TrainData{&p.train, &p.test, nullptr}, o);
  Device& d = *devices[0];
  CsrBatch batch;
  slice_rows(p.test, 0, 300, &batch);
  const int k = 5;
  std::vector<col_t> exact(300 * k), approx(300 * k);
  std::vector<float> exact_s(exact.size()), approx_s(exact.size());
  d.predict_topk(batch, k, exact.data(), exact_s.data());
  for (index_t head : {index_t{0}, index_t{500}}) {
    ASSERT_TRUE(cpu::predict_topk_clustered(d, batch, k, head, 16, approx.data(), approx_s.data()));
    TopkRecall recall;
    accumulate_topk_recall(exact.data(), approx.data(), 300, k, &recall);
    finish_topk_recall(&recall);
    EXPECT_GE(recall.at_k(1), 0.9) << "head " << head;
    EXPECT_GE(recall.at_k(5), 0.8) << "head " << head;
    for (std::size_t i = 0; i < exact.size(); ++i) {
      if (approx[i] == exact[i]) {
        EXPECT_NEAR(approx_s[i], exact_s[i], 1e-4);
      }
    }
  }
}

// No training index is needed: an untrained replica without hard negatives, or with the full
// output layer, ranks through clusters built from its weights; with a head of every label the
// ranking is the exact one.
TEST(IndexedEvaluation, AnyCpuReplicaRanksWithoutATrainingIndex) {
  test::EngineProblem p = shortlisted_problem();
  CsrBatch batch;
  slice_rows(p.test, 0, 64, &batch);
  const int k = 5;
  std::vector<col_t> labels(64 * k), exact(labels.size());
  std::vector<float> scores(labels.size()), exact_s(labels.size());
  ModelConfig none = p.config;
  none.shortlist.hard_negatives = 0;
  ModelConfig full = p.config;
  full.output_layer = OutputLayer::kFull;
  for (const ModelConfig& c : {none, full}) {
    auto devices = test::cpu_devices({"cpu:0"}, c);
    ASSERT_TRUE(indexed_topk(*devices[0], batch, k, 0, labels.data(), scores.data()));
    devices[0]->predict_topk(batch, k, exact.data(), exact_s.data());
    EXPECT_EQ(labels, exact);  // kIndexedEvalHead >= 3,000 labels
  }
}

}  // namespace
}  // namespace hetsgd
