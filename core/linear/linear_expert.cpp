#include "core/linear/linear_expert.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include "core/error.h"
#include "core/random.h"

namespace hetsgd {

void LinearOptions::validate() const {
  HETSGD_CHECK(cost > 0.0 && std::isfinite(cost), "linear expert: cost " << cost << " must be > 0");
  HETSGD_CHECK(tolerance > 0.0 && std::isfinite(tolerance),
               "linear expert: tolerance " << tolerance << " must be > 0");
  HETSGD_CHECK(max_passes >= 1 && max_passes <= 10000,
               "linear expert: max_passes " << max_passes << " outside [1, 10000]");
  HETSGD_CHECK(prune >= 0.0f && std::isfinite(prune),
               "linear expert: prune " << prune << " must be >= 0");
  HETSGD_CHECK(threads >= 0, "linear expert: threads " << threads << " < 0");
  HETSGD_CHECK(pilot_share >= 0.0 && pilot_share < 1.0,
               "linear expert: pilot_share " << pilot_share << " outside [0, 1)");
}

namespace {

// A thread's buffers, sized once: the label's rows, and per row of them the dual variable,
// the order and the sign; the dense weights (the bias last), zero between labels.
struct Scratch {
  std::vector<index_t> rows, merged;
  std::vector<double> alpha;
  std::vector<index_t> order;
  std::vector<signed char> sign;
  std::vector<double> w;
};

// Dual coordinate descent for the squared hinge loss (Hsieh et al. 2008, Algorithm 3 with
// shrinking) over the rows s->rows (ascending), positives [pos_begin, pos_end) among them: the
// dual has one variable per row, alpha_i >= 0 with no upper bound, and
// w = sum_i alpha_i y_i x_i. A row whose alpha is 0 and whose gradient is above the last pass's
// largest projected gradient is left out (shrunk) until the pass converges; it is then checked
// again over every row, so the answer is that of the unshrunk problem. Most rows are negatives
// far from the margin, so after a pass or two a rare label touches little more than its
// positives and the rows that look like them.
LinearExpert::Classifier train_label(const Dataset& x, const std::vector<double>& qd,
                                     const index_t* pos_begin, const index_t* pos_end,
                                     const LinearOptions& o, std::uint64_t seed, Scratch* s) {
  const auto n = static_cast<index_t>(s->rows.size());
  const auto d = static_cast<size_t>(x.num_features);
  const double diag = 0.5 / o.cost;  // the squared hinge's term of the dual's Hessian
  const index_t* p = pos_begin;
  for (index_t j = 0; j < n; ++j) {
    const index_t r = s->rows[static_cast<size_t>(j)];
    while (p != pos_end && *p < r) ++p;
    s->sign[static_cast<size_t>(j)] = p != pos_end && *p == r ? 1 : -1;
    s->alpha[static_cast<size_t>(j)] = 0.0;
    s->order[static_cast<size_t>(j)] = j;
  }
  SplitMix64 rng(seed);
  const double inf = std::numeric_limits<double>::infinity();
  double pg_max_old = inf;
  index_t active = n;
  for (int pass = 0; pass < o.max_passes; ++pass) {
    double pg_max = -inf, pg_min = inf;
    for (index_t j = 0; j + 1 < active; ++j) {
      const auto k = j + static_cast<index_t>(rng() % static_cast<std::uint64_t>(active - j));
      std::swap(s->order[static_cast<size_t>(j)], s->order[static_cast<size_t>(k)]);
    }
    for (index_t j = 0; j < active; ++j) {
      const index_t v = s->order[static_cast<size_t>(j)];
      const index_t i = s->rows[static_cast<size_t>(v)];
      const double y = s->sign[static_cast<size_t>(v)];
      double dot = s->w[d];  // the bias, a feature of value 1
      for (index_t e = x.x_indptr[i]; e < x.x_indptr[i + 1]; ++e)
        dot += s->w[static_cast<size_t>(x.x_indices[e])] * static_cast<double>(x.x_values[e]);
      double& a = s->alpha[static_cast<size_t>(v)];
      const double g = y * dot - 1.0 + diag * a;
      double pg = g;
      if (a == 0.0) {
        if (g > pg_max_old) {  // shrink: at its bound and pushing further out
          --active;
          std::swap(s->order[static_cast<size_t>(j)], s->order[static_cast<size_t>(active)]);
          --j;
          continue;
        }
        pg = std::min(g, 0.0);
      }
      pg_max = std::max(pg_max, pg);
      pg_min = std::min(pg_min, pg);
      if (std::fabs(pg) <= 1e-12) continue;
      const double old = a;
      a = std::max(a - g / qd[static_cast<size_t>(i)], 0.0);
      const double step = (a - old) * y;
      for (index_t e = x.x_indptr[i]; e < x.x_indptr[i + 1]; ++e)
        s->w[static_cast<size_t>(x.x_indices[e])] += step * static_cast<double>(x.x_values[e]);
      s->w[d] += step;
    }
    if (pg_max - pg_min <= o.tolerance) {
      if (active == n) break;
      active = n;  // converged on the shrunk rows: check every row once more
      pg_max_old = inf;
      continue;
    }
    pg_max_old = pg_max > 0.0 ? pg_max : inf;
  }
  // Only the rows' features moved: they are read and zeroed for the next label, so a label
  // costs its rows, not the feature count.
  LinearExpert::Classifier c;
  c.bias = static_cast<float>(s->w[d]);
  s->w[d] = 0.0;
  for (index_t i : s->rows) {
    for (index_t e = x.x_indptr[i]; e < x.x_indptr[i + 1]; ++e) {
      double& w = s->w[static_cast<size_t>(x.x_indices[e])];
      if (w == 0.0) continue;
      if (std::fabs(w) >= o.prune) c.kept.emplace_back(x.x_indices[e], static_cast<float>(w));
      w = 0.0;
    }
  }
  std::sort(c.kept.begin(), c.kept.end());
  return c;
}

// ln sigmoid(z), without overflow at either end.
float log_sigmoid(float z) {
  return z >= 0.0f ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z));
}

}  // namespace

namespace {

// The labels a pilot trains first: a seeded random share of them (`share` of each label's
// draw), so that the pilot sees head and tail labels alike.
std::vector<char> pilot_labels(index_t L, double share, std::uint64_t seed) {
  std::vector<char> pick(static_cast<size_t>(L), 0);
  for (index_t l = 0; l < L; ++l)
    pick[static_cast<size_t>(l)] =
        uniform01(seed ^ 0x9170ull, static_cast<std::uint64_t>(l)) < share ? 1 : 0;
  return pick;
}

// The rows of each label, ascending: `begin` (L + 1 offsets) into `rows`, the transpose of
// each row's labels, given by `each(r, f)` calling f(l) once per label l of row r.
struct LabelRows {
  std::vector<index_t> begin;
  std::vector<index_t> rows;
  const index_t* first(index_t l) const { return rows.data() + begin[static_cast<size_t>(l)]; }
  const index_t* last(index_t l) const { return rows.data() + begin[static_cast<size_t>(l) + 1]; }
};

template <typename Each>
LabelRows transpose(index_t n, index_t L, const Each& each) {
  LabelRows t;
  t.begin.assign(static_cast<size_t>(L) + 1, 0);
  for (index_t r = 0; r < n; ++r) each(r, [&](col_t l) { ++t.begin[static_cast<size_t>(l) + 1]; });
  for (index_t l = 0; l < L; ++l)
    t.begin[static_cast<size_t>(l) + 1] += t.begin[static_cast<size_t>(l)];
  t.rows.resize(static_cast<size_t>(t.begin.back()));
  std::vector<index_t> at(t.begin.begin(), t.begin.end() - 1);
  for (index_t r = 0; r < n; ++r)
    each(r, [&](col_t l) { t.rows[static_cast<size_t>(at[static_cast<size_t>(l)]++)] = r; });
  return t;
}

// The union of ascending lists a, b and c into `out`, ascending (`ab` a buffer).
void merge3(const index_t* a0, const index_t* a1, const index_t* b0, const index_t* b1,
            const std::vector<index_t>& c, std::vector<index_t>* ab, std::vector<index_t>* out) {
  ab->clear();
  out->clear();
  std::set_union(a0, a1, b0, b1, std::back_inserter(*ab));
  std::set_union(ab->begin(), ab->end(), c.begin(), c.end(), std::back_inserter(*out));
}

}  // namespace

// Each label's positive rows, and each row's squared norm with the bias feature and the
// dual's diagonal term: Q_ii of the dual; with a shortlist, the rows naming each label and
// the rows every label sees.
struct LinearExpert::Plan {
  LabelRows positives, named;
  std::vector<index_t> shared;
  std::vector<double> qd;
  bool shortlisted = false;

  Plan(const Dataset& train, const LinearOptions& o, const LinearShortlist* shortlist) {
    const index_t n = train.rows();
    const index_t L = train.num_labels;
    positives = transpose(n, L, [&](index_t r, const auto& f) {
      for (index_t e = train.y_indptr[r]; e < train.y_indptr[r + 1]; ++e) f(train.y_indices[e]);
    });
    qd.assign(static_cast<size_t>(n), 1.0 + 0.5 / o.cost);
    for (index_t r = 0; r < n; ++r) {
      for (index_t e = train.x_indptr[r]; e < train.x_indptr[r + 1]; ++e)
        qd[static_cast<size_t>(r)] +=
            static_cast<double>(train.x_values[e]) * static_cast<double>(train.x_values[e]);
    }
    if (shortlist == nullptr) return;
    shortlisted = true;
    const auto k = static_cast<size_t>(shortlist->k);
    named = transpose(n, L, [&](index_t r, const auto& f) {
      for (size_t j = 0; j < k; ++j) {
        const col_t l = shortlist->labels[static_cast<size_t>(r) * k + j];
        if (l >= 0 && l < L) f(l);
      }
    });
    for (index_t r = 0; r < n; ++r) {
      if (uniform01(o.seed ^ 0x5a3eull, static_cast<std::uint64_t>(r)) * static_cast<double>(n) <
          static_cast<double>(shortlist->sample_rows))
        shared.push_back(r);
    }
  }
};

// The classifiers of `labels` (every label where null) into `out`, in parallel; false when
// `stop` ended it first.
bool LinearExpert::train_labels(const Dataset& train, const LinearOptions& o, const Plan& plan,
                                const std::vector<char>* labels, const std::atomic<bool>* stop,
                                std::vector<Classifier>* out) {
  const index_t n = train.rows();
  const index_t L = train.num_labels;
  tbb::enumerable_thread_specific<Scratch> scratch([&] {
    Scratch s;
    s.alpha.resize(static_cast<size_t>(n));
    s.order.resize(static_cast<size_t>(n));
    s.sign.resize(static_cast<size_t>(n));
    s.w.assign(static_cast<size_t>(train.num_features) + 1, 0.0);
    if (!plan.shortlisted) {  // every label on every row: the rows once per thread
      s.rows.resize(static_cast<size_t>(n));
      for (index_t r = 0; r < n; ++r) s.rows[static_cast<size_t>(r)] = r;
    }
    return s;
  });
  std::unique_ptr<tbb::global_control> limit;
  if (o.threads > 0) {
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  static_cast<size_t>(o.threads));
  }
  std::atomic<bool> stopped{false};
  tbb::parallel_for(tbb::blocked_range<index_t>(0, L, 1), [&](const auto& range) {
    Scratch& s = scratch.local();
    for (index_t l = range.begin(); l != range.end(); ++l) {
      if (stopped.load() || (stop != nullptr && stop->load())) {
        stopped.store(true);
        return;
      }
      if (labels != nullptr && !(*labels)[static_cast<size_t>(l)]) continue;
      const index_t* pb = plan.positives.first(l);
      const index_t* pe = plan.positives.last(l);
      if (pb == pe || n == 0) continue;  // no positive: the default, bias -1
      if (plan.shortlisted)
        merge3(pb, pe, plan.named.first(l), plan.named.last(l), plan.shared, &s.merged, &s.rows);
      (*out)[static_cast<size_t>(l)] =
          train_label(train, plan.qd, pb, pe, o, hash64(o.seed, static_cast<std::uint64_t>(l)), &s);
    }
  });
  return !stopped.load();
}

LinearExpert LinearExpert::assemble(index_t num_features, const std::vector<Classifier>& labels) {
  // By feature, labels ascending within each: a row's score is then a walk over its features.
  const auto L = static_cast<index_t>(labels.size());
  LinearExpert e;
  e.num_features_ = num_features;
  e.num_labels_ = L;
  e.bias_.resize(static_cast<size_t>(L));
  e.feature_begin_.assign(static_cast<size_t>(num_features) + 1, 0);
  for (index_t l = 0; l < L; ++l) {
    e.bias_[static_cast<size_t>(l)] = labels[static_cast<size_t>(l)].bias;
    for (const auto& [f, v] : labels[static_cast<size_t>(l)].kept)
      ++e.feature_begin_[static_cast<size_t>(f) + 1];
  }
  for (size_t f = 0; f + 1 < e.feature_begin_.size(); ++f)
    e.feature_begin_[f + 1] += e.feature_begin_[f];
  e.labels_.resize(static_cast<size_t>(e.feature_begin_.back()));
  e.weights_.resize(e.labels_.size());
  std::vector<std::int64_t> at(e.feature_begin_.begin(), e.feature_begin_.end() - 1);
  for (index_t l = 0; l < L; ++l) {
    for (const auto& [f, v] : labels[static_cast<size_t>(l)].kept) {
      const auto slot = static_cast<size_t>(at[static_cast<size_t>(f)]++);
      e.labels_[slot] = static_cast<col_t>(l);
      e.weights_[slot] = v;
    }
  }
  return e;
}

LinearExpert LinearExpert::train(const Dataset& train, const LinearOptions& o,
                                 const std::atomic<bool>* stop, const LinearShortlist* shortlist) {
  o.validate();
  if (shortlist != nullptr) {
    HETSGD_CHECK(
        shortlist->k >= 1 && shortlist->labels.size() == static_cast<size_t>(train.rows()) *
                                                             static_cast<size_t>(shortlist->k),
        "linear expert: a shortlist of " << shortlist->labels.size() << " ids for " << train.rows()
                                         << " rows of " << shortlist->k << " labels");
    HETSGD_CHECK(shortlist->sample_rows >= 0,
                 "linear expert: shortlist sample_rows " << shortlist->sample_rows << " < 0");
  }
  const Plan plan(train, o, shortlist);
  std::vector<Classifier> labels(static_cast<size_t>(train.num_labels));
  if (o.pilot_share > 0.0 && o.go_on) {
    // The pilot's labels first; going on trains the others, each from its own seed, so the
    // classifiers are those trained without a pilot.
    std::vector<char> pick = pilot_labels(train.num_labels, o.pilot_share, o.seed);
    if (!train_labels(train, o, plan, &pick, stop, &labels)) return {};
    if (!o.go_on(assemble(train.num_features, labels), pick)) return {};
    for (char& p : pick) p = !p;
    if (!train_labels(train, o, plan, &pick, stop, &labels)) return {};
  } else if (!train_labels(train, o, plan, nullptr, stop, &labels)) {
    return {};
  }
  return assemble(train.num_features, labels);
}

std::vector<float> LinearExpert::log_sigmoid_biases() const {
  std::vector<float> out(bias_.size());
  for (size_t l = 0; l < bias_.size(); ++l) out[l] = log_sigmoid(bias_[l]);
  return out;
}

void LinearExpert::log_sigmoid_scores(const CsrBatch& rows, LabelScoreRows* scores) const {
  const auto L = static_cast<size_t>(num_labels_);
  scores->resize(static_cast<size_t>(rows.rows()));
  // Per thread: the scores, at the biases between rows, and the labels a row moved (listed
  // without a branch: each entry writes its label at the list's end, which grows only on a
  // label's first entry, so that a row's many entries cost no mispredicted jumps).
  struct Scratch {
    std::vector<float> z;
    std::vector<char> moved;
    std::vector<col_t> touched;
  };
  tbb::enumerable_thread_specific<Scratch> scratch([&] {
    return Scratch{bias_, std::vector<char>(L, 0), std::vector<col_t>(L + 1)};
  });
  tbb::parallel_for(tbb::blocked_range<index_t>(0, rows.rows(), 8), [&](const auto& range) {
    Scratch& s = scratch.local();
    for (index_t r = range.begin(); r != range.end(); ++r) {
      size_t n = 0;
      for (index_t e = rows.x_indptr[r]; e < rows.x_indptr[r + 1]; ++e) {
        const col_t f = rows.x_indices[e];
        if (f < 0 || f >= num_features_) continue;
        const float x = rows.x_values[e];
        for (std::int64_t k = feature_begin_[static_cast<size_t>(f)];
             k < feature_begin_[static_cast<size_t>(f) + 1]; ++k) {
          const col_t l = labels_[static_cast<size_t>(k)];
          const auto i = static_cast<size_t>(l);
          s.touched[n] = l;
          n += s.moved[i] == 0;
          s.moved[i] = 1;
          s.z[i] += x * weights_[static_cast<size_t>(k)];
        }
      }
      std::vector<LabelScore>& out = (*scores)[static_cast<size_t>(r)];
      out.resize(n);
      for (size_t t = 0; t < n; ++t) {
        const col_t l = s.touched[t];
        const auto i = static_cast<size_t>(l);
        out[t] = {l, log_sigmoid(s.z[i])};
        s.z[i] = bias_[i];
        s.moved[i] = 0;
      }
    }
  });
}

}  // namespace hetsgd
