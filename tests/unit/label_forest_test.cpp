// The label forest (core/forest/): what its trees learn, its bytes in the model file, and the
// blend a saved model ranks by.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/forest/half.h"
#include "core/forest/label_forest.h"
#include "core/linear/linear_expert.h"
#include "core/model/model_io.h"
#include "core/model/ranker.h"
#include "core/random.h"
#include "kernels/cpu/api.h"
#include "tests/common/dense_scores.h"
#include "tests/common/small_models.h"
#include "tests/common/topic_rows.h"

namespace hetsgd {
namespace {

// Rows of `groups` topics: row r is of topic g = r % groups, holds 3 of its topic's own 8
// features and the labels {2g, 2g + 1}, plus a shared label 2 * groups when r is even.
Dataset topics(index_t rows, int groups, std::uint64_t seed) {
  Dataset d;
  d.num_features = 8 * groups;
  d.num_labels = 2 * groups + 1;
  SplitMix64 rng(seed);
  for (index_t r = 0; r < rows; ++r) {
    const auto g = static_cast<col_t>(r % groups);
    std::vector<col_t> labels = {2 * g, 2 * g + 1};
    if (r % 2 == 0) labels.push_back(2 * groups);
    test::add_topic_row(d, g, rng, labels);
  }
  return d;
}

ForestOptions small_forest() {
  ForestOptions o;
  o.trees = 8;
  o.arity = 4;
  o.leaf_rows = 5;
  o.label_dims = 16;
  return o;
}

// scores() laid out in full: each row's listed labels once, every other label 0.
std::vector<float> scores_of(const LabelForest& f, const Dataset& rows) {
  LabelScoreRows sparse;
  f.scores(rows, &sparse);
  EXPECT_EQ(sparse.size(), static_cast<size_t>(rows.rows()));
  return test::dense_scores(sparse, f.num_labels());
}

TEST(LabelForest, ARowScoresTheLabelsOfTheRowsItsTopicTrainedOn) {
  const Dataset train = topics(400, 4, 1);
  const Dataset test = topics(40, 4, 2);
  const LabelForest f = LabelForest::grow(train, small_forest());
  ASSERT_EQ(f.trees(), 8);
  EXPECT_GT(f.nodes(), 8);  // the trees split
  const std::vector<float> s = scores_of(f, test);
  const auto L = static_cast<size_t>(f.num_labels());
  for (index_t r = 0; r < test.rows(); ++r) {
    const float* row = s.data() + static_cast<size_t>(r) * L;
    const auto g = static_cast<size_t>(r % 4);
    // Normalised to sum 1, on the topic's labels and the shared one, which every row of an
    // even topic holds (r even) and no row of an odd one: leaves are pure.
    const double shared = g % 2 == 0 ? 1.0 / 3.0 : 0.0;
    EXPECT_NEAR(std::accumulate(row, row + L, 0.0), 1.0, 1e-5);
    EXPECT_NEAR(row[2 * g] + row[2 * g + 1], 1.0 - shared, 1e-5) << "row " << r;
    EXPECT_NEAR(row[L - 1], shared, 1e-5) << "row " << r;
  }
}

// top_labels() is the top-k of add_scores()'s scores among the labels scored above 0, ties
// to the lower label, -1 past them.
TEST(LabelForest, TopLabelsAreTheHighestScoredLabelsTheLeavesHold) {
  const Dataset train = topics(400, 4, 1);
  const Dataset test = topics(40, 4, 2);
  const LabelForest f = LabelForest::grow(train, small_forest());
  const std::vector<float> s = scores_of(f, test);
  const auto L = static_cast<size_t>(f.num_labels());
  for (int k : {1, 3, 9}) {
    std::vector<col_t> top;
    f.top_labels(test, k, &top);
    ASSERT_EQ(top.size(), static_cast<size_t>(test.rows() * k));
    for (index_t r = 0; r < test.rows(); ++r) {
      const float* row = s.data() + static_cast<size_t>(r) * L;
      std::vector<col_t> want;
      for (size_t l = 0; l < L; ++l)
        if (row[l] > 0.0f) want.push_back(static_cast<col_t>(l));
      std::stable_sort(want.begin(), want.end(), [&](col_t a, col_t b) { return row[a] > row[b]; });
      want.resize(static_cast<size_t>(k), col_t{-1});
      const std::vector<col_t> got(top.begin() + r * k, top.begin() + (r + 1) * k);
      EXPECT_EQ(got, want) << "row " << r << ", k " << k;
    }
  }
  std::vector<col_t> none;
  EXPECT_THROW(f.top_labels(test, 0, &none), InvalidArgument);
}

TEST(LabelForest, TheSameSeedGrowsTheSameForestAndAnotherSeedAnother) {
  const Dataset train = topics(300, 3, 3);
  ForestOptions o = small_forest();
  std::string a, b, c;
  LabelForest::grow(train, o).serialize(&a);
  LabelForest::grow(train, o).serialize(&b);
  o.seed = 2;
  LabelForest::grow(train, o).serialize(&c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(LabelForest, LeavesKeepTheirMostFrequentLabels) {
  const Dataset train = topics(300, 3, 3);
  ForestOptions o = small_forest();
  o.leaf_labels = 1;
  const LabelForest f = LabelForest::grow(train, o);
  const std::vector<float> s = scores_of(f, topics(30, 3, 4));
  // One label a leaf: each row's scores sit on its topic's labels, none on the shared one
  // (held by half the rows, so never a leaf's most frequent).
  const auto L = static_cast<size_t>(f.num_labels());
  for (index_t r = 0; r < 30; ++r) {
    const auto g = static_cast<size_t>(r % 3);
    EXPECT_NEAR(s[static_cast<size_t>(r) * L + 2 * g] + s[static_cast<size_t>(r) * L + 2 * g + 1],
                1.0, 1e-5);
  }
}

TEST(LabelForest, ItsBytesParseBackToTheSameScores) {
  const Dataset train = topics(300, 3, 5);
  const LabelForest f = LabelForest::grow(train, small_forest());
  std::string bytes;
  f.serialize(&bytes);
  const LabelForest g = LabelForest::parse(bytes, train.num_features, train.num_labels, "m");
  const Dataset test = topics(30, 3, 6);
  EXPECT_EQ(scores_of(f, test), scores_of(g, test));
}

TEST(LabelForest, DamagedBytesAreRefusedNamingWhatIsWrong) {
  const Dataset train = topics(200, 2, 7);
  const LabelForest f = LabelForest::grow(train, small_forest());
  std::string bytes;
  f.serialize(&bytes);
  const auto fails = [&](const std::string& b, index_t d, index_t l, const std::string& what) {
    try {
      LabelForest::parse(b, d, l, "model.bin");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("model.bin"), std::string::npos) << e.what();
    }
  };
  fails(bytes.substr(0, bytes.size() - 3), train.num_features, train.num_labels, "feature weights");
  fails(bytes, train.num_features + 1, train.num_labels, "shape");
  fails("HFOREST0" + bytes.substr(8), train.num_features, train.num_labels, "magic");
  // The first node's first child pointed back at itself: descending would never end.
  std::string loop = bytes;
  const std::size_t node0 = 8 + 6 * 8 + static_cast<std::size_t>(f.trees()) * 4;
  const std::int32_t zero = 0;
  std::memcpy(&loop[node0], &zero, sizeof zero);
  fails(loop, train.num_features, train.num_labels, "node 0");
  // A leaf label past the model's labels (the last leaf label entry, 2 bytes, set to L).
  std::string label = bytes;
  const auto L = static_cast<std::uint16_t>(train.num_labels);
  std::int64_t leaves = 0;
  std::memcpy(&leaves, bytes.data() + 8 + 5 * 8, 8);
  // After the leaf labels: their binary16 weights, then the idf weights (a count and one a
  // feature).
  const std::size_t idf_bytes = 8 + static_cast<std::size_t>(train.num_features) * 4;
  const std::size_t last_label =
      bytes.size() - idf_bytes - static_cast<std::size_t>(leaves) * 2 - 2;
  std::memcpy(&label[last_label], &L, sizeof L);
  fails(label, train.num_features, train.num_labels, "leaf entry");
  // A node claiming one more centroid entry than the section holds.
  std::string count = bytes;
  const std::size_t cents0 = node0 + 8;  // node 0's centroid count
  std::uint32_t n = 0;
  std::memcpy(&n, &count[cents0], sizeof n);
  ++n;
  std::memcpy(&count[cents0], &n, sizeof n);
  fails(count, train.num_features, train.num_labels, "centroid and");
  // A leaf frequency stored as a binary16 infinity.
  std::string inf = bytes;
  const std::uint16_t inf_bits = 0x7c00;
  std::memcpy(&inf[bytes.size() - idf_bytes - 2], &inf_bits, sizeof inf_bits);
  fails(inf, train.num_features, train.num_labels, "leaf entry");
}

// The stored form: 2 bytes an id where they fit, binary16 values, rounded when grown so the
// forest that ranks is the one the file holds; bytes() is what serialize() writes.
TEST(LabelForest, ItsStoredFormIsCompactAndExact) {
  const Dataset train = topics(300, 3, 5);
  const LabelForest f = LabelForest::grow(train, small_forest());
  std::string bytes;
  f.serialize(&bytes);
  EXPECT_EQ(static_cast<std::int64_t>(bytes.size()), f.bytes());
  EXPECT_EQ(bytes.substr(0, 8), "HFOREST3");
  std::int64_t nodes = 0, cents = 0, leaves = 0;
  std::memcpy(&nodes, bytes.data() + 8 + 3 * 8, 8);
  std::memcpy(&cents, bytes.data() + 8 + 4 * 8, 8);
  std::memcpy(&leaves, bytes.data() + 8 + 5 * 8, 8);
  EXPECT_EQ(f.bytes(), 8 + 6 * 8 + f.trees() * 4 + nodes * 16 + (cents + leaves) * 4 + 8 +
                           train.num_features * 4);
  // Every stored value survives the round trip bit for bit: the scores are equal.
  const LabelForest g = LabelForest::parse(bytes, train.num_features, train.num_labels, "m");
  std::string again;
  g.serialize(&again);
  EXPECT_EQ(again, bytes);
}

TEST(Half, EveryHalfRoundTripsAndFloatsRoundToTheNearest) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float v = from_half(bits);
    if (std::isnan(v)) continue;
    EXPECT_EQ(to_half(v), bits) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(from_half(to_half(1.0f)), 1.0f);
  EXPECT_EQ(from_half(to_half(0.1f)), 0.0999755859375f);    // 1638 / 16384, the nearest
  EXPECT_EQ(from_half(to_half(1.0f + 1.0f / 2048)), 1.0f);  // a tie: to the even mantissa
  EXPECT_EQ(from_half(to_half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(from_half(to_half(1e-7f)), std::ldexp(2.0f, -24));  // subnormal: 1.68 units of 2^-24
  EXPECT_EQ(from_half(to_half(70000.0f)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_half(to_half(-65504.0f)), -65504.0f);
  EXPECT_TRUE(std::isnan(from_half(to_half(std::nanf("")))));
}

// A byte budget keeps the first trees that fit, the same on any thread count, and a forest
// of those trees is what an unbudgeted forest of that many trees is.
TEST(LabelForest, ABudgetKeepsTheFirstTreesThatFit) {
  const Dataset train = topics(300, 3, 5);
  ForestOptions o = small_forest();
  o.trees = 12;
  const LabelForest whole = LabelForest::grow(train, o);
  ForestOptions budget = o;
  budget.max_bytes = whole.bytes() / 2;
  budget.threads = 1;
  const LabelForest half = LabelForest::grow(train, budget);
  EXPECT_GT(half.trees(), 2);
  EXPECT_LT(half.trees(), 12);
  EXPECT_LE(half.bytes(), budget.max_bytes + budget.max_bytes / 4);  // per-tree sizes vary
  budget.threads = 2;
  std::string one, two;
  half.serialize(&one);
  LabelForest::grow(train, budget).serialize(&two);
  EXPECT_EQ(one, two);
  ForestOptions same = o;
  same.trees = half.trees();
  std::string plain;
  LabelForest::grow(train, same).serialize(&plain);
  EXPECT_EQ(plain, one);
  budget.max_bytes = 100;  // not one tree
  EXPECT_TRUE(LabelForest::grow(train, budget).empty());
}

// The bytes of an unweighted forest ("HFOREST1") of 4 features and 3 labels whose node i
// has children [first[i], first[i] + kids[i]); every leaf holds label 0.
std::string forest_bytes(const std::vector<std::int32_t>& roots,
                         const std::vector<std::int32_t>& first,
                         const std::vector<std::int32_t>& kids) {
  std::string b = "HFOREST1";
  const auto put = [&b](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  std::int64_t leaves = 0;
  for (std::int32_t k : kids) leaves += k == 0;
  for (std::int64_t v : {std::int64_t{4}, std::int64_t{3}, static_cast<std::int64_t>(roots.size()),
                         static_cast<std::int64_t>(first.size()), std::int64_t{0}, leaves}) {
    put(v);
  }
  for (std::int32_t r : roots) put(r);
  std::int64_t leaf = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    put(first[i]);
    put(kids[i]);
    put(std::int64_t{0});
    put(std::int64_t{0});
    put(leaf);
    leaf += kids[i] == 0;
    put(leaf);
  }
  for (std::int64_t e = 0; e < leaves; ++e) put(std::int32_t{0});
  for (std::int64_t e = 0; e < leaves; ++e) put(1.0f);
  return b;
}

TEST(LabelForest, NodesSharedBetweenParentsOrTreesAreRefusedNamingTheNode) {
  const auto fails = [](const std::string& b, const std::string& what) {
    try {
      LabelForest::parse(b, 4, 3, "model.bin");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("model.bin"), std::string::npos) << e.what();
    }
  };
  // A proper forest: tree 0 is node 0 with leaves 1 and 2, tree 1 is the leaf 3.
  EXPECT_EQ(LabelForest::parse(forest_bytes({0, 3}, {1, 0, 0, 0}, {2, 0, 0, 0}), 4, 3, "m").nodes(),
            4);
  // A chain of n nodes with a root at each of its first n / 2: every range check passes, and a
  // row's descent from all roots would visit n^2 / 4 nodes (here 10^8 for n = 20,000).
  const std::int32_t n = 20000;
  std::vector<std::int32_t> first(n, 0), kids(n, 0), roots(n / 2);
  for (std::int32_t i = 0; i + 1 < n; ++i) first[i] = i + 1, kids[i] = 1;
  std::iota(roots.begin(), roots.end(), 0);
  fails(forest_bytes(roots, first, kids), "node 1 is a child of node 0 and is also reached");
  // Two trees with the same root node.
  fails(forest_bytes({0, 0}, {1, 0}, {1, 0}), "node 0 is the root of tree 1");
  // Node 2 hangs from both node 0 and node 1 (the roots of two trees).
  fails(forest_bytes({0, 1}, {2, 2, 0}, {1, 1, 0}), "node 2 is a child of node 1");
  // Node 2 hangs from nothing.
  fails(forest_bytes({0}, {1, 0, 0}, {1, 0, 0}), "node 2 is reached from no root");
}

// `m` written to a model file and read back (the file removed).
SavedModel round_trip(const SavedModel& m, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  save_model(path, m);
  SavedModel back = load_model(path);
  std::remove(path.c_str());
  return back;
}

ModelConfig softmax_config(const Dataset& d) {
  ModelConfig c = test::fixed_model();
  c.num_features = d.num_features;
  c.num_labels = d.num_labels;
  c.hidden = {8};
  c.loss = Loss::kSoftmax;
  return c;
}

TEST(ForestBlend, TheModelFileCarriesTheForestAndTheBlendRanksByIt) {
  const Dataset train = topics(300, 3, 8);
  const Dataset test = topics(30, 3, 9);
  SavedModel m;
  m.config = softmax_config(train);
  auto dev = cpu::make_device(0, m.config, DeviceOptions{1, false});
  m.params.resize(static_cast<size_t>(dev->layout().total()));
  dev->read(Buffer::kParams, m.params.data());  // the untrained network: near-uniform scores
  m.forest = std::make_shared<const LabelForest>(LabelForest::grow(train, small_forest()));
  m.forest_weight = 0.5;
  const SavedModel back = round_trip(m, "forest_model.bin");
  ASSERT_NE(back.forest, nullptr);
  EXPECT_EQ(back.forest_weight, 0.5);
  EXPECT_EQ(back.params, m.params);
  EXPECT_EQ(scores_of(*back.forest, test), scores_of(*m.forest, test));

  const LoadedRanker loaded = load_ranker(back, [](const ModelConfig& c) {
    return cpu::make_device(0, c, {1, false});
  });
  Ranker& blend = *loaded.ranker;
  const int k = 5;
  std::vector<col_t> labels(static_cast<size_t>(test.rows() * k));
  std::vector<float> scores(labels.size());
  blend.predict_topk(test, k, labels.data(), scores.data());
  // The blend by hand: the network's softmax over every label and the forest's normalised
  // scores raised by the floor, each to the power 1/2, their product normalised.
  const index_t L = m.config.num_labels;
  std::vector<col_t> all(static_cast<size_t>(test.rows() * L));
  std::vector<float> raw(all.size());
  blend.network().predict_topk(test, static_cast<int>(L), all.data(), raw.data());
  const std::vector<float> f = scores_of(*m.forest, test);
  std::vector<float> want(f.size());
  for (index_t r = 0; r < test.rows(); ++r) {
    double sum = 0.0;
    for (index_t j = 0; j < L; ++j) sum += std::exp(raw[r * L + j] - raw[r * L]);
    double z = 0.0;
    for (index_t j = 0; j < L; ++j) {
      const index_t l = all[r * L + j];
      const double p = std::exp(raw[r * L + j] - raw[r * L]) / sum;
      want[r * L + l] = static_cast<float>(std::sqrt(p * (f[r * L + l] + kForestFloor)));
      z += want[r * L + l];
    }
    for (index_t l = 0; l < L; ++l) want[r * L + l] = static_cast<float>(want[r * L + l] / z);
    for (int j = 0; j < k; ++j) {
      const col_t l = labels[r * k + j];
      ASSERT_GE(l, 0);
      EXPECT_NEAR(scores[r * k + j], want[r * L + l], 1e-5) << "row " << r << " rank " << j;
      if (j > 0) {
        EXPECT_GE(scores[r * k + j - 1], scores[r * k + j]);
      }
    }
    // Nothing left out scores above the k-th.
    std::vector<float> row(want.begin() + r * L, want.begin() + (r + 1) * L);
    std::sort(row.begin(), row.end(), std::greater<float>());
    EXPECT_NEAR(row[k - 1], scores[r * k + k - 1], 1e-5);
  }
  // Weight 0 is the network itself.
  blend.set_forest_weight(0.0);
  std::vector<col_t> plain(labels.size()), own(labels.size());
  std::vector<float> plain_s(labels.size()), own_s(labels.size());
  blend.predict_topk(test, k, plain.data(), plain_s.data());
  blend.network().predict_topk(test, k, own.data(), own_s.data());
  EXPECT_EQ(plain, own);
  EXPECT_THROW(blend.set_forest_weight(1.5), InvalidArgument);
}

// score_all is every label's logit: its top-k (by the same total order) is predict_topk's, and
// the ranker's softmax probabilities sum to 1 over the labels.
TEST(Ranker, ScoreAllIsEveryLabelsLogitAndProbabilitiesSumToOne) {
  const Dataset test = topics(40, 3, 9);
  ModelConfig c = softmax_config(test);
  c.hidden = {16};
  auto dev = cpu::make_device(0, c, DeviceOptions{1, false});
  const index_t L = c.num_labels;
  std::vector<float> all(static_cast<size_t>(test.rows() * L));
  const float loss_all = dev->score_all(test, all.data());
  const int k = 3;
  std::vector<col_t> labels(static_cast<size_t>(test.rows() * k));
  std::vector<float> scores(labels.size());
  const float loss_topk = dev->predict_topk(test, k, labels.data(), scores.data());
  EXPECT_NEAR(loss_all, loss_topk, 1e-5);
  for (index_t r = 0; r < test.rows(); ++r) {
    for (int j = 0; j < k; ++j) {
      EXPECT_NEAR(all[r * L + labels[r * k + j]], scores[r * k + j], 1e-5);
    }
    const float kth = scores[r * k + k - 1];
    int above = 0;
    for (index_t l = 0; l < L; ++l) above += all[r * L + l] > kth + 1e-5f;
    EXPECT_LT(above, k) << "row " << r;
  }
  // The ranker's experts without a forest: the logits as they are, no forest term.
  Ranker ranker(*dev);
  ExpertScores experts;
  EXPECT_NEAR(ranker.log_experts(test, &experts), loss_all, 1e-6);
  EXPECT_EQ(experts.logits, all);
  EXPECT_FALSE(experts.has_forest);
  EXPECT_FALSE(experts.has_linear);
  // Probabilities: each row's softmax, computed here in double; the top label's is the
  // largest, and they sum to at most 1 over any k labels.
  ranker.predict_probabilities(test, k, labels.data(), scores.data());
  for (index_t r = 0; r < test.rows(); ++r) {
    const float* s = all.data() + r * L;
    const double top = *std::max_element(s, s + L);
    double z = 0.0;
    for (index_t l = 0; l < L; ++l) z += std::exp(s[l] - top);
    double sum = 0.0;
    for (int j = 0; j < k; ++j) {
      EXPECT_NEAR(scores[r * k + j], std::exp(s[labels[r * k + j]] - top) / z, 1e-6);
      sum += scores[r * k + j];
    }
    EXPECT_LE(sum, 1.0 + 1e-6);
  }
}

// The blend in log space ranks as the product of the experts' probabilities does, and its
// scores are that product normalised over the labels (computed here in double).
TEST(Ranker, BlendIsTheNormalisedProductOfTheExperts) {
  const index_t L = 6;
  const int k = 3;
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 0.0f,  1.5f, -3.0f,  // row 0
                                     3.0f, 2.9f, 0.1f,  -0.2f, 0.0f, 0.0f};  // row 1
  const std::vector<float> forest = {0.0f, 0.1f, 0.0f, 0.6f, 0.3f, 0.0f,     // sums to 1
                                     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
  // The experts' terms as log_experts() leaves them: the forest's on the labels it scores.
  ExpertScores experts;
  experts.logits = logits;
  experts.has_forest = true;
  experts.log_forest.resize(2);
  for (index_t r = 0; r < 2; ++r) {
    for (index_t l = 0; l < L; ++l) {
      const float f = forest[r * L + l];
      if (f > 0.0f)
        experts.log_forest[r].push_back({static_cast<col_t>(l), std::log(f + kForestFloor)});
    }
  }
  const double w = 0.5;
  std::vector<col_t> labels(2 * k);
  std::vector<float> scores(labels.size());
  Ranker::blend_topk(experts, L, w, 0.0, k, labels.data(), scores.data());
  for (index_t r = 0; r < 2; ++r) {
    std::vector<double> product(static_cast<size_t>(L));
    double z = 0.0, zp = 0.0;
    for (index_t l = 0; l < L; ++l) zp += std::exp(logits[r * L + l]);
    for (index_t l = 0; l < L; ++l) {
      const double p = std::exp(logits[r * L + l]) / zp;
      product[l] = std::pow(p, 1.0 - w) * std::pow(forest[r * L + l] + kForestFloor, w);
      z += product[l];
    }
    std::vector<col_t> order(static_cast<size_t>(L));
    for (index_t l = 0; l < L; ++l) order[l] = static_cast<col_t>(l);
    std::stable_sort(order.begin(), order.end(),
                     [&](col_t a, col_t b) { return product[a] > product[b]; });
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(labels[r * k + j], order[j]) << "row " << r << " rank " << j;
      EXPECT_NEAR(scores[r * k + j], product[order[j]] / z, 1e-6);
    }
  }
  // Ranks alone: the same labels without scores.
  std::vector<col_t> ranked(labels.size());
  Ranker::blend_topk(experts, L, w, 0.0, k, ranked.data(), nullptr);
  EXPECT_EQ(ranked, labels);
}

// RowBlend's every label is the blend of the experts' full terms: a label neither sparse
// expert reaches scores their floors, and a row's reached labels leave nothing behind for the
// next row.
TEST(Ranker, ARowBlendIsEveryLabelsBlendOfTheExpertsTerms) {
  const index_t L = 5;
  ExpertScores x;
  x.logits = {0.5f, 2.0f, -1.0f, 0.0f,  1.5f,  // row 0
              3.0f, 2.9f, 0.1f,  -0.2f, 0.0f};
  x.has_forest = true;
  x.log_forest = {{{1, -1.0f}, {3, -0.5f}}, {{4, -0.2f}}};
  x.has_linear = true;
  x.log_linear = {{{3, -0.1f}, {0, -2.0f}}, {{1, -0.3f}}};
  x.linear_floor = {-1.5f, -1.4f, -1.3f, -1.2f, -1.1f};
  const std::vector<float> prior = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  const float w = 0.4f, u = 0.3f, g = 0.5f;
  const auto full = [&](index_t r, const LabelScoreRows& sparse, float floor_of_others,
                        const std::vector<float>* floors) {
    std::vector<float> t(static_cast<size_t>(L));
    for (index_t l = 0; l < L; ++l) t[l] = floors != nullptr ? (*floors)[l] : floor_of_others;
    for (const LabelScore& e : sparse[r]) t[e.label] = e.score;
    return t;
  };
  RowBlend blend(x, L);
  std::vector<float> v(static_cast<size_t>(L));
  for (index_t r : {0, 1, 0}) {
    blend.row(r, w, u, prior.data(), g, v.data());
    const std::vector<float> f = full(r, x.log_forest, std::log(kForestFloor), nullptr);
    const std::vector<float> z = full(r, x.log_linear, 0.0f, &x.linear_floor);
    for (index_t l = 0; l < L; ++l) {
      const float want =
          (1 - u) * ((1 - w) * (x.logits[r * L + l] + g * prior[l]) + w * f[l]) + u * z[l];
      EXPECT_NEAR(v[l], want, 1e-6) << "row " << r << " label " << l;
    }
  }
  // Without the experts: the logits as they are, whatever the weights.
  ExpertScores net;
  net.logits = x.logits;
  RowBlend alone(net, L);
  alone.row(1, w, u, nullptr, 0.0f, v.data());
  for (index_t l = 0; l < L; ++l) EXPECT_EQ(v[l], net.logits[L + l]);
}

// Scores kept from a ranker with the forest, completed by one that adds the linear
// classifiers, are what that ranker scores afresh; a ranker without them drops their terms.
TEST(Ranker, ReusedScoresAreCompletedWithTheExpertsTheyLack) {
  const Dataset train = topics(300, 3, 8);
  const Dataset test = topics(30, 3, 9);
  const ModelConfig c = softmax_config(train);
  auto dev = cpu::make_device(0, c, DeviceOptions{1, false});
  const auto forest = std::make_shared<const LabelForest>(LabelForest::grow(train, small_forest()));
  const auto linear = std::make_shared<const LinearExpert>(LinearExpert::train(train, {}));
  Ranker with_forest(*dev, forest, 0.0);
  Ranker both(*dev, forest, 0.0, linear, 0.0);
  ExpertScores kept, fresh;
  const float loss = with_forest.log_experts(test, &kept);
  EXPECT_TRUE(kept.has_forest);
  EXPECT_FALSE(kept.has_linear);
  EXPECT_EQ(both.log_experts(test, &kept, true), loss);
  both.log_experts(test, &fresh);
  const auto same = [](const LabelScoreRows& a, const LabelScoreRows& b) {
    if (a.size() != b.size()) return false;
    for (size_t r = 0; r < a.size(); ++r) {
      if (a[r].size() != b[r].size()) return false;
      for (size_t i = 0; i < a[r].size(); ++i)
        if (a[r][i].label != b[r][i].label || a[r][i].score != b[r][i].score) return false;
    }
    return true;
  };
  ASSERT_TRUE(kept.has_linear);
  EXPECT_EQ(kept.logits, fresh.logits);
  EXPECT_TRUE(same(kept.log_forest, fresh.log_forest));
  EXPECT_TRUE(same(kept.log_linear, fresh.log_linear));
  EXPECT_EQ(kept.linear_floor, fresh.linear_floor);
  Ranker alone(*dev);
  alone.log_experts(test, &kept, true);
  EXPECT_FALSE(kept.has_forest);
  EXPECT_FALSE(kept.has_linear);
  EXPECT_EQ(kept.logits, fresh.logits);
}

TEST(ForestBlend, AModelWithoutAForestStoresNone) {
  const Dataset train = topics(50, 2, 10);
  SavedModel m;
  m.config = softmax_config(train);
  m.params.assign(static_cast<size_t>(ParamLayout(m.config).total()), 0.01f);
  const SavedModel back = round_trip(m, "plain_model.bin");
  EXPECT_EQ(back.forest, nullptr);
  EXPECT_EQ(back.forest_weight, 0.0);
  EXPECT_EQ(back.params, m.params);
}

}  // namespace
}  // namespace hetsgd
