// LinearExpert: one-vs-rest classifiers that learn what the features say of each label, the
// same classifiers whatever the threads, bytes that round-trip and refuse damage, and a byte
// bound met by dropping the smallest weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/linear/linear_expert.h"
#include "core/model/model_io.h"
#include "core/model/ranker.h"
#include "core/random.h"
#include "kernels/cpu/api.h"
#include "tests/common/dense_scores.h"
#include "tests/common/scratch_dir.h"
#include "tests/common/small_models.h"
#include "tests/common/topic_rows.h"

namespace hetsgd {
namespace {

// Rows of 4 topics (3 of a topic's 8 features, the topic's label) and label 4, which no row
// holds.
Dataset topics(index_t rows, std::uint64_t seed) {
  Dataset d;
  d.num_features = 32;
  d.num_labels = 5;
  SplitMix64 rng(seed);
  for (index_t r = 0; r < rows; ++r) {
    const auto g = static_cast<col_t>(r % 4);
    test::add_topic_row(d, g, rng, {g});
  }
  return d;
}

// log_sigmoid_scores() laid out in full: each row's listed labels once, every other label
// its bias's ln sigmoid.
std::vector<float> scores_of(const LinearExpert& e, const Dataset& rows) {
  const std::vector<float> floor = e.log_sigmoid_biases();
  EXPECT_EQ(floor.size(), static_cast<size_t>(e.num_labels()));
  LabelScoreRows sparse;
  e.log_sigmoid_scores(rows, &sparse);
  EXPECT_EQ(sparse.size(), static_cast<size_t>(rows.rows()));
  return test::dense_scores(sparse, e.num_labels(), floor);
}

// The solver's classifiers, every weight kept: the default pruning (0.2) is chosen for real
// rows and leaves a toy set's 3-feature rows short of their margins.
LinearOptions unpruned() {
  LinearOptions o;
  o.prune = 0.0f;
  return o;
}

TEST(LinearExpert, EachLabelsClassifierSeparatesItsRowsFromTheRest) {
  const Dataset train = topics(200, 1), test = topics(40, 2);
  const LinearExpert e = LinearExpert::train(train, unpruned());
  ASSERT_FALSE(e.empty());
  EXPECT_GT(e.weights(), 0);
  const std::vector<float> s = scores_of(e, test);
  const index_t L = e.num_labels();
  for (index_t r = 0; r < test.rows(); ++r) {
    const col_t truth = test.y_indices[static_cast<size_t>(test.y_indptr[r])];
    for (index_t l = 0; l < L; ++l) {
      const float p = std::exp(s[static_cast<size_t>(r * L + l)]);  // sigmoid(z)
      // The squared hinge pushes a row to its margin, z = +-1: sigmoid 0.73 / 0.27.
      if (l == truth) {
        EXPECT_GT(p, 0.6f) << "row " << r << " label " << l;
      } else {
        EXPECT_LT(p, 0.4f) << "row " << r << " label " << l;
      }
    }
  }
  // Label 4 is on no row: no weight, its bias the default -1.
  EXPECT_NEAR(s[static_cast<size_t>(4)], -std::log1p(std::exp(1.0f)), 1e-6);
}

TEST(LinearExpert, TheSameDataAndSeedTrainTheSameClassifiersOnAnyThreads) {
  const Dataset train = topics(300, 3);
  LinearOptions one;
  one.threads = 1;
  LinearOptions two;
  two.threads = 2;
  std::string a, b;
  LinearExpert::train(train, one).serialize(&a);
  LinearExpert::train(train, two).serialize(&b);
  EXPECT_EQ(a, b);
  LinearOptions other = one;
  other.seed = 99;  // another order of the rows: another (close) optimum
  std::string c;
  LinearExpert::train(train, other).serialize(&c);
  EXPECT_NE(a, c);
}

// A pilot sees the classifiers of a share of the labels (the others without weights, bias
// -1); going on gives the classifiers trained without a pilot, a no gives none.
TEST(LinearExpert, APilotSeesAShareOfTheLabelsAndGoingOnTrainsTheSameClassifiers) {
  Dataset train;
  train.num_features = 64;
  train.num_labels = 30;
  SplitMix64 rng(8);
  for (index_t r = 0; r < 600; ++r) {
    const auto g = static_cast<col_t>(r % 8);
    test::add_topic_row(train, g, rng, {g, static_cast<col_t>(8 + r % 22)});
  }
  std::string plain;
  LinearExpert::train(train, LinearOptions{}).serialize(&plain);
  LinearOptions o;
  o.pilot_share = 1.0 / 3.0;
  int asked = 0;
  o.go_on = [&](const LinearExpert& first, const std::vector<char>& trained) {
    ++asked;
    const auto picked = std::count(trained.begin(), trained.end(), 1);
    EXPECT_GT(picked, 0);
    EXPECT_LT(picked, 30);
    // The labels left out score as a label no row holds: no weight, bias -1.
    const std::vector<float> s = scores_of(first, train);
    for (index_t l = 0; l < 30; ++l) {
      if (trained[static_cast<size_t>(l)]) continue;
      for (index_t r = 0; r < train.rows(); ++r)
        EXPECT_NEAR(s[static_cast<size_t>(r * 30 + l)], -std::log1p(std::exp(1.0f)), 1e-6);
    }
    return true;
  };
  std::string piloted;
  LinearExpert::train(train, o).serialize(&piloted);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(piloted, plain);
  o.go_on = [](const LinearExpert&, const std::vector<char>&) { return false; };
  EXPECT_TRUE(LinearExpert::train(train, o).empty());
}

// A shortlist naming every label on every row leaves every classifier every row: the
// classifiers trained without one.
TEST(LinearExpert, AShortlistNamingEveryLabelTrainsTheClassifiersOfEveryRow) {
  const Dataset train = topics(200, 5);
  LinearShortlist all;
  all.k = 5;
  for (index_t r = 0; r < train.rows(); ++r)
    for (col_t l = 0; l < 5; ++l) all.labels.push_back(l);
  std::string plain, shortlisted;
  LinearExpert::train(train, LinearOptions{}).serialize(&plain);
  LinearExpert::train(train, LinearOptions{}, nullptr, &all).serialize(&shortlisted);
  EXPECT_EQ(shortlisted, plain);
}

// Each label's classifier is the one trained on its positives and the rows naming it alone:
// here each row names the next topic's label, so label l sees topics l and l - 1 (mod 4), and
// its classifier is the one trained on those rows of the set without a shortlist.
TEST(LinearExpert, AShortlistedClassifierIsTrainedOnItsPositivesAndTheRowsNamingItAlone) {
  const Dataset train = topics(200, 6), test = topics(40, 7);
  LinearShortlist next;
  next.k = 1;
  for (index_t r = 0; r < train.rows(); ++r)
    next.labels.push_back(static_cast<col_t>((r % 4 + 1) % 4));
  const LinearExpert e = LinearExpert::train(train, LinearOptions{}, nullptr, &next);
  const std::vector<float> s = scores_of(e, test);
  for (col_t l = 0; l < 4; ++l) {
    Dataset seen;
    seen.num_features = train.num_features;
    seen.num_labels = train.num_labels;
    for (index_t r = 0; r < train.rows(); ++r) {
      if (r % 4 != l && (r % 4 + 1) % 4 != l) continue;
      for (index_t e = train.x_indptr[r]; e < train.x_indptr[r + 1]; ++e) {
        seen.x_indices.push_back(train.x_indices[e]);
        seen.x_values.push_back(train.x_values[e]);
      }
      seen.x_indptr.push_back(static_cast<index_t>(seen.x_indices.size()));
      for (index_t e = train.y_indptr[r]; e < train.y_indptr[r + 1]; ++e)
        seen.y_indices.push_back(train.y_indices[e]);
      seen.y_indptr.push_back(static_cast<index_t>(seen.y_indices.size()));
    }
    const std::vector<float> want = scores_of(LinearExpert::train(seen, LinearOptions{}), test);
    for (index_t r = 0; r < test.rows(); ++r)
      EXPECT_EQ(s[static_cast<size_t>(r * 5 + l)], want[static_cast<size_t>(r * 5 + l)])
          << "label " << l << " row " << r;
  }
  // It is not the classifier of every row: label 0 never saw topic 2's rows.
  const std::vector<float> plain = scores_of(LinearExpert::train(train, LinearOptions{}), test);
  EXPECT_NE(s, plain);
  // A sample of every row is every row: the classifiers without a shortlist.
  next.sample_rows = train.rows();
  EXPECT_EQ(scores_of(LinearExpert::train(train, LinearOptions{}, nullptr, &next), test), plain);
  next.sample_rows = -1;
  EXPECT_THROW(LinearExpert::train(train, LinearOptions{}, nullptr, &next), InvalidArgument);
  next.sample_rows = 0;
  next.labels.pop_back();
  EXPECT_THROW(LinearExpert::train(train, LinearOptions{}, nullptr, &next), InvalidArgument);
}

TEST(LinearExpert, BytesRoundTripAndDamageIsRefusedNamingTheSection) {
  const Dataset train = topics(200, 4), test = topics(20, 5);
  const LinearExpert e = LinearExpert::train(train, LinearOptions{});
  std::string bytes;
  e.serialize(&bytes);
  EXPECT_EQ(static_cast<std::int64_t>(bytes.size()), e.bytes());
  const LinearExpert back = LinearExpert::parse(bytes, 32, 5, "m.bin");
  EXPECT_EQ(scores_of(back, test), scores_of(e, test));

  EXPECT_THROW(LinearExpert::parse(bytes, 32, 6, "m.bin"), IoError);  // another shape
  EXPECT_THROW(LinearExpert::parse(bytes.substr(0, bytes.size() - 1), 32, 5, "m.bin"), IoError);
  // The first entry's label (uint16, after the header, the biases and the offsets) past the
  // labels.
  std::string bad = bytes;
  const size_t label_at = 8 + 3 * 8 + 5 * 4 + 33 * 8;
  bad[label_at] = 9;
  bad[label_at + 1] = 0;
  try {
    LinearExpert::parse(bad, 32, 5, "m.bin");
    FAIL() << "a label id past the labels was read";
  } catch (const IoError& err) {
    EXPECT_NE(std::string(err.what()).find("m.bin: linear section: entry 0 (label 9"),
              std::string::npos)
        << err.what();
  }
}

TEST(LinearExpert, FittingABytesBoundDropsTheSmallestWeights) {
  const Dataset train = topics(200, 6);
  LinearOptions o;
  o.prune = 0.0f;
  const LinearExpert full = LinearExpert::train(train, o);
  LinearExpert small = full;
  const std::int64_t bound = full.bytes() - 6 * (full.weights() / 2);  // half the entries
  small.fit_bytes(bound);
  EXPECT_LE(small.bytes(), bound);
  EXPECT_EQ(small.weights(), full.weights() - full.weights() / 2);
  // Every dropped weight is at most the smallest kept one.
  std::string a, b;
  full.serialize(&a);
  small.serialize(&b);
  const auto weights_of = [](const std::string& bytes, std::int64_t n) {
    std::vector<float> w(static_cast<size_t>(n));
    std::memcpy(w.data(), bytes.data() + bytes.size() - w.size() * 4, w.size() * 4);
    for (float& x : w) x = std::fabs(x);
    std::sort(w.begin(), w.end());
    return w;
  };
  const std::vector<float> all = weights_of(a, full.weights());
  const std::vector<float> kept = weights_of(b, small.weights());
  EXPECT_EQ(kept,
            std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(kept.size()), all.end()));
  small.fit_bytes(0);  // nothing fits: every weight goes, the biases stay
  EXPECT_EQ(small.weights(), 0);
}

// The model file carries the classifiers and their weight; the loaded Ranker ranks by
// [p^(1-w) (f + floor)^w]^(1-u) sigmoid(z)^u, here without a forest: p^(1-u) sigmoid(z)^u.
TEST(LinearBlend, TheModelFileCarriesTheClassifiersAndTheBlendRanksByThem) {
  const Dataset train = topics(200, 8), test = topics(24, 9);
  SavedModel m;
  m.config = test::fixed_model();
  m.config.num_features = train.num_features;
  m.config.num_labels = train.num_labels;
  m.config.hidden = {8};
  m.config.loss = Loss::kSoftmax;
  auto dev = cpu::make_device(0, m.config, DeviceOptions{1, false});
  m.params.resize(static_cast<size_t>(dev->layout().total()));
  dev->read(Buffer::kParams, m.params.data());  // the untrained network
  m.linear = std::make_shared<const LinearExpert>(LinearExpert::train(train, unpruned()));
  m.linear_weight = 0.4;
  const test::ScratchDir dir(test::per_test_temp_path("hetsgd_linear_model"));
  const std::string path = dir.path("m.bin");
  save_model(path, m);
  const SavedModel back = load_model(path);
  ASSERT_NE(back.linear, nullptr);
  EXPECT_EQ(back.linear_weight, 0.4);
  EXPECT_EQ(back.forest, nullptr);
  EXPECT_EQ(scores_of(*back.linear, test), scores_of(*m.linear, test));

  const LoadedRanker loaded = load_ranker(back, [](const ModelConfig& c) {
    return cpu::make_device(0, c, {1, false});
  });
  ASSERT_FALSE(loaded.ranker->network_only());
  const index_t L = m.config.num_labels;
  const int k = 3;
  std::vector<col_t> labels(static_cast<size_t>(test.rows() * k));
  std::vector<float> scores(labels.size());
  loaded.ranker->predict_topk(test, k, labels.data(), scores.data());
  std::vector<float> logits(static_cast<size_t>(test.rows() * L));
  loaded.ranker->network().score_all(test, logits.data());
  const std::vector<float> z = scores_of(*m.linear, test);
  for (index_t r = 0; r < test.rows(); ++r) {
    std::vector<double> v(static_cast<size_t>(L));
    double total = 0.0;
    for (index_t l = 0; l < L; ++l) {
      const auto i = static_cast<size_t>(r * L + l);
      v[static_cast<size_t>(l)] = std::exp(0.6 * logits[i] + 0.4 * z[i]);
      total += v[static_cast<size_t>(l)];
    }
    for (int j = 0; j < k; ++j) {
      const col_t l = labels[static_cast<size_t>(r * k + j)];
      ASSERT_GE(l, 0);
      EXPECT_NEAR(scores[static_cast<size_t>(r * k + j)], v[static_cast<size_t>(l)] / total, 1e-5);
    }
    // The row's top label: its topic's, which the classifiers know and the network does not.
    EXPECT_EQ(labels[static_cast<size_t>(r * k)], test.y_indices[static_cast<size_t>(r)]);
  }
  // Weight 0 is the network itself; a weight past 1 is refused.
  loaded.ranker->set_linear_weight(0.0);
  EXPECT_TRUE(loaded.ranker->network_only());
  EXPECT_THROW(loaded.ranker->set_linear_weight(1.5), InvalidArgument);
}

TEST(LinearExpert, OptionsOutOfRangeAreRefused) {
  const Dataset train = topics(8, 7);
  const std::vector<std::function<void(LinearOptions&)>> breaks = {
      [](LinearOptions& o) { o.cost = 0.0; }, [](LinearOptions& o) { o.tolerance = -1.0; },
      [](LinearOptions& o) { o.max_passes = 0; },
      [](LinearOptions& o) { o.prune = std::nanf(""); }};
  for (const auto& bad : breaks) {
    LinearOptions o;
    bad(o);
    EXPECT_THROW(LinearExpert::train(train, o), InvalidArgument);
  }
}

}  // namespace
}  // namespace hetsgd
