// LabelClusters (kernels/cpu/label_clusters.h): the k-means inverted file the final evaluation
// of an extreme model ranks through. Every label lands in exactly one cluster, probing every
// cluster gives the exact top-k, and on label vectors with structure a few probes find most of
// it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/math/topk.h"
#include "core/metrics.h"
#include "kernels/cpu/label_clusters.h"

namespace hetsgd::cpu {
namespace {

constexpr index_t kHidden = 16;

// `labels` label vectors around `groups` random directions (norms 0.5 to 2), biases in
// [-1, 0], and `rows` queries near random group directions: the shape of a trained output
// layer, whose labels share directions with the hidden rows that rank them.
struct Problem {
  std::vector<float> w, b, h;
  index_t labels = 0, rows = 0;
};
Problem make_problem(index_t labels, index_t rows, int groups, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> dirs(static_cast<std::size_t>(groups * kHidden));
  for (float& x : dirs) x = g(rng);
  Problem p;
  p.labels = labels;
  p.rows = rows;
  auto near = [&](float* out, float spread, float scale) {
    const float* d = dirs.data() + (rng() % groups) * kHidden;
    for (index_t t = 0; t < kHidden; ++t) out[t] = scale * (d[t] + spread * g(rng));
  };
  p.w.resize(static_cast<std::size_t>(labels * kHidden));
  p.b.resize(static_cast<std::size_t>(labels));
  for (index_t j = 0; j < labels; ++j) {
    near(p.w.data() + j * kHidden, 0.3f, 0.5f + 1.5f * u(rng));
    p.b[j] = -u(rng);
  }
  p.h.resize(static_cast<std::size_t>(rows * kHidden));
  for (index_t r = 0; r < rows; ++r) near(p.h.data() + r * kHidden, 0.3f, 1.0f);
  return p;
}

// Top-k lists of every row, row after row: label ids (-1 where none) and their scores.
struct TopK {
  std::vector<col_t> ids;
  std::vector<float> scores;
  TopK(const Problem& p, int k)
      : ids(static_cast<std::size_t>(p.rows * k), -1), scores(ids.size(), -INFINITY) {}
};

// Exact top-k of every row by h . w_j + b_j.
TopK exact_topk(const Problem& p, int k) {
  TopK t(p, k);
  std::vector<float> z(static_cast<std::size_t>(p.labels));
  for (index_t r = 0; r < p.rows; ++r) {
    for (index_t j = 0; j < p.labels; ++j) {
      float s = p.b[j];
      for (index_t t = 0; t < kHidden; ++t) s += p.h[r * kHidden + t] * p.w[j * kHidden + t];
      z[j] = s;
    }
    math::topk_row(z.data(), p.labels, k, t.scores.data() + r * k, t.ids.data() + r * k);
  }
  return t;
}

// The top-k that `c` finds probing `probes` clusters, labels marked in `skip` left out.
TopK search(const LabelClusters& c, const Problem& p, int k, int probes, const std::uint8_t* skip) {
  TopK t(p, k);
  std::vector<int> size(static_cast<std::size_t>(p.rows), 0);
  c.search(p.h.data(), p.rows, p.w.data(), p.b.data(), k, probes, skip, t.scores.data(),
           t.ids.data(), size.data());
  return t;
}

// `clusters` clusters over `p`'s labels.
LabelClusters clusters_of(const Problem& p, index_t clusters) {
  LabelClusterParams params;
  params.clusters = clusters;
  LabelClusters c;
  c.build(p.w.data(), p.b.data(), p.labels, kHidden, params);
  return c;
}

// The same labels in the same order, scores within float rounding.
void expect_same_topk(const std::vector<col_t>& ids, const std::vector<float>& scores,
                      const TopK& exact) {
  EXPECT_EQ(ids, exact.ids);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_NEAR(scores[i], exact.scores[i], 1e-4) << i;
}

TEST(LabelClusters, EveryLabelIsInExactlyOneClusterAndTheBuildRepeats) {
  const Problem p = make_problem(5000, 1, 40, 3);
  LabelClusters a, b;
  a.build(p.w.data(), p.b.data(), p.labels, kHidden, LabelClusterParams{});
  b.build(p.w.data(), p.b.data(), p.labels, kHidden, LabelClusterParams{});
  ASSERT_TRUE(a.ready());
  // Auto size: about 1.2 sqrt(L) clusters (85 here), less any left empty.
  EXPECT_LE(a.clusters(), 85);
  EXPECT_GE(a.clusters(), 40);
  std::vector<int> seen(static_cast<std::size_t>(p.labels), 0);
  for (index_t c = 0; c < a.clusters(); ++c) {
    EXPECT_GE(a.cluster_size(c), 1) << "cluster " << c;
    ASSERT_EQ(a.cluster_size(c), b.cluster_size(c));
    for (index_t i = 0; i < a.cluster_size(c); ++i) {
      ++seen[a.members(c)[i]];
      EXPECT_EQ(a.members(c)[i], b.members(c)[i]);
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), p.labels);
}

TEST(LabelClusters, ProbingEveryClusterIsExactScoring) {
  const Problem p = make_problem(3000, 200, 30, 5);
  const TopK got = search(clusters_of(p, 50), p, 5, 50, nullptr);
  expect_same_topk(got.ids, got.scores, exact_topk(p, 5));
}

TEST(LabelClusters, SkippedLabelsAreNeverReturned) {
  const Problem p = make_problem(3000, 100, 30, 7);
  const int k = 5;
  const std::vector<col_t> exact = exact_topk(p, k).ids;
  // Skip every label of the exact top-1s: the search then returns the exact list without them.
  std::vector<std::uint8_t> skip(static_cast<std::size_t>(p.labels), 0);
  for (index_t r = 0; r < p.rows; ++r) skip[exact[r * k]] = 1;
  for (col_t j : search(clusters_of(p, 40), p, k, 40, skip.data()).ids) {
    ASSERT_GE(j, 0);
    EXPECT_EQ(skip[j], 0) << "label " << j;
  }
}

TEST(LabelClusters, AFewProbesFindMostOfTheExactTopK) {
  const Problem p = make_problem(20000, 500, 100, 11);
  LabelClusters c;  // auto: 170 clusters; 16 probes score about a tenth of the labels
  c.build(p.w.data(), p.b.data(), p.labels, kHidden, LabelClusterParams{});
  const int k = 5;
  const TopK exact = exact_topk(p, k);
  // The recall of `probes` probes against the exact lists.
  const auto recall_of = [&](int probes) {
    TopkRecall recall;
    accumulate_topk_recall(exact.ids.data(), search(c, p, k, probes, nullptr).ids.data(), p.rows, k,
                           &recall);
    finish_topk_recall(&recall);
    return recall;
  };
  const TopkRecall recall = recall_of(16);
  EXPECT_GE(recall.at_k(1), 0.9);
  EXPECT_GE(recall.at_k(5), 0.9);
  // One probe finds less: the probes, not a full scan, carry the result.
  const TopkRecall few = recall_of(1);
  EXPECT_LT(few.at_k(5), recall.at_k(5));
}

// Lists that already hold k entries (a head's) are merged into, not replaced: with the head's
// labels skipped and every cluster probed, the result is the exact top-k of all labels, also
// where the clusters only score labels below a row's k-th (which the search drops early).
TEST(LabelClusters, ListsAlreadyFullAreMergedIntoExactly) {
  const Problem p = make_problem(3000, 200, 30, 13);
  const int k = 5;
  const LabelClusters c = clusters_of(p, 40);
  // The "head": labels 0..999, scored exactly into each row's list and skipped by the search.
  const index_t head = 1000;
  std::vector<std::uint8_t> skip(static_cast<std::size_t>(p.labels), 0);
  std::fill(skip.begin(), skip.begin() + head, 1);
  std::vector<col_t> ids(static_cast<std::size_t>(p.rows * k));
  std::vector<float> scores(ids.size());
  std::vector<int> size(static_cast<std::size_t>(p.rows), 0);
  for (index_t r = 0; r < p.rows; ++r) {
    for (index_t j = 0; j < head; ++j) {
      float v = p.b[j];
      for (index_t t = 0; t < kHidden; ++t) v += p.h[r * kHidden + t] * p.w[j * kHidden + t];
      math::topk_insert(scores.data() + r * k, ids.data() + r * k, k, size[r], v,
                        static_cast<col_t>(j));
    }
  }
  c.search(p.h.data(), p.rows, p.w.data(), p.b.data(), k, 40, skip.data(), scores.data(),
           ids.data(), size.data());
  expect_same_topk(ids, scores, exact_topk(p, k));
}

// A probe ranks a cluster by what its best member may score: a tight cluster whose centroid
// scores 1 loses to a wide one whose centroid scores 0 but whose members reach 3.
TEST(LabelClusters, AProbeRanksAWideClusterByWhatItsMembersMayScore) {
  Problem p;
  p.labels = 100;
  p.rows = 1;
  p.w.assign(static_cast<std::size_t>(p.labels * kHidden), 0.0f);
  p.b.assign(static_cast<std::size_t>(p.labels), 0.0f);
  p.h.assign(kHidden, 0.0f);
  p.h[0] = 1.0f;  // the query scores a label by its first weight
  for (index_t j = 0; j < 50; ++j) {
    // Tight: (1, 10, 0, ...) give or take 0.01 along the third axis.
    p.w[j * kHidden] = 1.0f;
    p.w[j * kHidden + 1] = 10.0f;
    p.w[j * kHidden + 2] = 0.01f * static_cast<float>(j % 3 - 1);
  }
  for (index_t j = 50; j < 100; ++j) {
    // Wide: on a circle of radius 3 around (0, -10, 0, ...); label 50 at (3, -10) scores 3.
    const double a = 2.0 * M_PI * static_cast<double>(j - 50) / 50.0;
    p.w[j * kHidden] = static_cast<float>(3.0 * std::cos(a));
    p.w[j * kHidden + 1] = static_cast<float>(-10.0 + 3.0 * std::sin(a));
  }
  const LabelClusters c = clusters_of(p, 2);
  ASSERT_EQ(c.clusters(), 2);
  ASSERT_EQ(exact_topk(p, 1).ids[0], 50);
  const TopK got = search(c, p, 1, 1, nullptr);  // one probe: the wide cluster's
  EXPECT_EQ(got.ids[0], 50);
  EXPECT_NEAR(got.scores[0], 3.0f, 1e-5);
}

}  // namespace
}  // namespace hetsgd::cpu
