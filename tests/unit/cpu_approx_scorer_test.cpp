// The CPU device's approximate top-k (kernels/cpu/approx_scorer.h) after the parameters
// change: its caches (the clustered evaluation's head and clusters, the --ann label index)
// follow the parameters' version, so whatever writes them (an optimiser step, a write of the
// whole buffer, a row-sparse write or an in-place merge through the row exchange), the next
// search ranks by the new weights, as exact scoring does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/random.h"
#include "core/row_exchange.h"
#include "kernels/cpu/cpu_device.h"
#include "tests/common/random_batch.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

constexpr int kTop = 5;
constexpr index_t kHead = 100;       // of 300 labels; the clusters hold the others
constexpr int kEveryCluster = 1000;  // more probes than clusters: every label is scored

CsrBatch random_batch(index_t d, index_t labels, index_t rows, std::uint64_t seed) {
  SplitMix64 rng(seed);
  CsrBatch b = test::empty_batch(d, labels);
  for (index_t r = 0; r < rows; ++r) {
    test::open_row(b, test::draw_ids(rng, 4, d), 0.5f, rng);
    test::close_row(b, test::draw_ids(rng, 3, labels));
  }
  return b;
}

ModelConfig config_of(bool shortlisted, std::uint64_t seed) {
  ModelConfig c = test::mlp(30, 300, {16});
  c.optimizer.kind = OptimizerKind::kSgd;
  c.seed = seed;
  if (shortlisted) {
    c.output_layer = OutputLayer::kShortlist;
    c.shortlist.hard_negatives = 0;  // no background index builds
  }
  return c;
}

struct TopK {
  std::vector<col_t> labels;
  std::vector<float> scores;
};

TopK exact_topk(cpu::CpuDevice& d, const CsrBatch& batch) {
  TopK t{std::vector<col_t>(static_cast<size_t>(batch.rows() * kTop)),
         std::vector<float>(static_cast<size_t>(batch.rows() * kTop))};
  d.predict_topk(batch, kTop, t.labels.data(), t.scores.data());
  return t;
}

TopK clustered_topk(cpu::CpuDevice& d, const CsrBatch& batch) {
  TopK t{std::vector<col_t>(static_cast<size_t>(batch.rows() * kTop)),
         std::vector<float>(static_cast<size_t>(batch.rows() * kTop))};
  d.predict_topk_clustered(batch, kTop, kHead, kEveryCluster, t.labels.data(), t.scores.data());
  return t;
}

// Every label scored: the clustered top-k is the exact one, up to the GEMMs' rounding.
void expect_exact(const TopK& got, const TopK& exact, const std::string& what) {
  ASSERT_EQ(got.scores.size(), exact.scores.size());
  for (size_t i = 0; i < got.scores.size(); ++i) {
    ASSERT_NEAR(got.scores[i], exact.scores[i], 1e-5f * (1.0f + std::fabs(exact.scores[i])))
        << what << ": entry " << i;
    ASSERT_EQ(got.labels[i], exact.labels[i]) << what << ": entry " << i;
  }
}

// The ways a replica's parameters change, each to values unlike the ones before: the writer
// copies (part of) `other`'s parameters into `d`.
using Writer = std::function<void(cpu::CpuDevice& d, cpu::CpuDevice& other, const CsrBatch&)>;

// Every output row, and the dense part (which holds the output layer when it is full).
ParamRows output_rows(const cpu::CpuDevice& d) {
  ParamRows rows = ParamRows::none(d.shortlisted());
  rows.input = {1, 4, 9};
  rows.dense = !d.shortlisted();
  if (d.shortlisted()) {
    for (index_t j = 0; j < d.config().num_labels; ++j)
      rows.output.push_back(static_cast<col_t>(j));
  }
  return rows;
}

std::vector<std::pair<std::string, Writer>> writers() {
  return {
      {"row-sparse write",
       [](cpu::CpuDevice& d, cpu::CpuDevice& other, const CsrBatch&) {
         const ParamRows rows = output_rows(d);
         std::vector<float> packed(static_cast<size_t>(packed_size(d.layout(), rows)));
         other.row_exchange()->read_rows(rows, packed.data());
         d.row_exchange()->write_rows(rows, packed.data());
       }},
      {"in-place host write",
       [](cpu::CpuDevice& d, cpu::CpuDevice& other, const CsrBatch&) {
         const std::vector<float> p = test::params_of(other);
         float* host = d.row_exchange()->host_params();
         std::copy(p.begin(), p.end(), host);
         d.row_exchange()->host_params_written();
       }},
      {"whole write", [](cpu::CpuDevice& d, cpu::CpuDevice& other,
                         const CsrBatch&) { d.write_params(test::params_of(other).data()); }},
      {"training steps",
       [](cpu::CpuDevice& d, cpu::CpuDevice&, const CsrBatch& batch) {
         for (int s = 0; s < 3; ++s) d.train_step(batch, 2.0f);
       }},
  };
}

TEST(ApproxScorer, AClusteredSearchAfterAnyParameterWriteRanksByTheNewWeights) {
  for (bool shortlisted : {false, true}) {
    for (const auto& [name, write] : writers()) {
      const std::string what = name + (shortlisted ? ", shortlisted" : ", full layer");
      cpu::CpuDevice d(0, config_of(shortlisted, 5), 2);
      cpu::CpuDevice other(0, config_of(shortlisted, 6), 1);
      const CsrBatch batch = random_batch(30, 300, 24, 3);
      // The head and the clusters are built from the weights of this first search.
      expect_exact(clustered_topk(d, batch), exact_topk(d, batch), what + ", before");
      const TopK before = exact_topk(d, batch);
      write(d, other, batch);
      const TopK after = exact_topk(d, batch);
      ASSERT_NE(before.scores, after.scores) << what << ": the write changed nothing";
      expect_exact(clustered_topk(d, batch), after, what);
    }
  }
}

// The label index of --ann after a row-sparse write of one output row: a label that the index
// of the old weights did not return for any row gets a bias above every logit, and the next
// search returns it first, with its exact score.
TEST(ApproxScorer, AnAnnSearchAfterARowSparseWriteFindsTheRewrittenLabel) {
  cpu::CpuDevice d(0, config_of(true, 5), 2);
  const CsrBatch batch = random_batch(30, 300, 24, 3);
  const auto n = static_cast<size_t>(batch.rows() * kTop);
  std::vector<col_t> labels(n);
  std::vector<float> scores(n);
  d.predict_topk_ann(batch, kTop, labels.data(), scores.data());
  col_t target = 0;
  while (std::find(labels.begin(), labels.end(), target) != labels.end()) ++target;
  ASSERT_LT(target, d.config().num_labels);

  ParamRows rows = ParamRows::none(true);
  rows.dense = false;
  rows.output = {target};
  std::vector<float> packed(static_cast<size_t>(packed_size(d.layout(), rows)));
  d.row_exchange()->read_rows(rows, packed.data());
  packed.back() = 50.0f;  // the bias, after the row's weights
  d.row_exchange()->write_rows(rows, packed.data());

  const TopK exact = exact_topk(d, batch);
  d.predict_topk_ann(batch, kTop, labels.data(), scores.data());
  for (index_t r = 0; r < batch.rows(); ++r) {
    ASSERT_EQ(exact.labels[r * kTop], target) << "row " << r;
    EXPECT_EQ(labels[r * kTop], target) << "row " << r;
    EXPECT_NEAR(scores[r * kTop], exact.scores[r * kTop], 1e-4f) << "row " << r;
  }
}

}  // namespace
}  // namespace hetsgd
