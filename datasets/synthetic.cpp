#include "datasets/synthetic.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/random.h"

namespace hetsgd::datasets {
namespace {

// Salts separate the random streams that share one seed.
constexpr std::uint64_t kRowSalt = 0x726F77730001ull;
constexpr std::uint64_t kSignatureSalt = 0x7369676E0002ull;
constexpr std::uint64_t kRelatedSalt = 0x72656C610003ull;
constexpr std::uint64_t kPermSalt = 0x7065726D0004ull;
constexpr index_t kRowsPerBlock = 256;

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// Inverse-CDF sampler of a Zipf law over ranks [0, n): P(rank k) ~ 1 / (k + 1)^s.
class ZipfTable {
 public:
  ZipfTable(index_t n, double s) : cdf_(static_cast<std::size_t>(n)) {
    double acc = 0.0;
    for (index_t k = 0; k < n; ++k) {
      acc += std::pow(static_cast<double>(k + 1), -s);
      cdf_[static_cast<std::size_t>(k)] = acc;
    }
    for (double& c : cdf_) c /= acc;
  }
  index_t rank(double u) const {
    const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
    return std::min<index_t>(static_cast<index_t>(it - cdf_.begin()),
                             static_cast<index_t>(cdf_.size()) - 1);
  }

 private:
  std::vector<double> cdf_;
};

// A bijection of [0, n) as rank -> a * rank + b (mod n), with gcd(a, n) = 1: a cheap fixed
// shuffle, so popular labels and features are scattered over the id space as in real data.
class AffinePermutation {
 public:
  AffinePermutation(index_t n, std::uint64_t seed) : n_(n) {
    a_ = static_cast<index_t>((static_cast<double>(n) * 0.6180339887) + 1) | 1;
    while (std::gcd(a_, n_) != 1) ++a_;
    a_ %= n_;
    if (a_ == 0) a_ = 1;
    b_ = static_cast<index_t>(hash64(seed, 0) % static_cast<std::uint64_t>(n));
    a_inv_ = modular_inverse(a_, n_);
  }
  index_t forward(index_t rank) const {
    const index_t v = mulmod(a_, rank, n_) + b_;
    return v < n_ ? v : v - n_;
  }
  index_t inverse(index_t id) const { return mulmod(a_inv_, (id - b_ + n_) % n_, n_); }

 private:
  // a, b < n < 2^31 (checked in check_spec), so the product fits in 63 bits.
  static index_t mulmod(index_t a, index_t b, index_t n) { return (a * b) % n; }
  static index_t modular_inverse(index_t a, index_t n) {
    if (n == 1) return 0;
    index_t t = 0, new_t = 1, r = n, new_r = a;
    while (new_r != 0) {
      const index_t q = r / new_r;
      t = t - q * new_t;
      std::swap(t, new_t);
      r = r - q * new_r;
      std::swap(r, new_r);
    }
    return t < 0 ? t + n : t;
  }
  index_t n_, a_ = 1, b_ = 0, a_inv_ = 1;
};

// Number of events of a Poisson(lambda) variable: inversion by products for small lambda,
// a rounded normal approximation above 30 (error irrelevant for shaping data).
index_t poisson(double lambda, SplitMix64& rng) {
  if (lambda <= 0.0) return 0;
  if (lambda < 30.0) {
    const double limit = std::exp(-lambda);
    double prod = unit(rng());
    index_t k = 0;
    while (prod > limit) {
      prod *= unit(rng());
      ++k;
    }
    return k;
  }
  const double u1 = std::max(unit(rng()), 1e-300), u2 = unit(rng());
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  return std::max<index_t>(0, std::llround(lambda + std::sqrt(lambda) * z));
}

struct Model {
  const SyntheticSpec& spec;
  std::uint64_t seed;
  ZipfTable label_zipf;
  ZipfTable feature_zipf;
  AffinePermutation label_perm;
  AffinePermutation feature_perm;

  Model(const SyntheticSpec& s, std::uint64_t sd)
      : spec(s),
        seed(sd),
        label_zipf(s.num_labels, s.label_power_law_exponent),
        feature_zipf(s.num_features, s.feature_power_law_exponent),
        label_perm(s.num_labels, hash64(sd, kPermSalt)),
        feature_perm(s.num_features, hash64(sd, kPermSalt + 1)) {}

  col_t zipf_label(double u) const {
    return static_cast<col_t>(label_perm.forward(label_zipf.rank(u)));
  }
  col_t signature(col_t label, index_t j) const {
    const std::uint64_t c =
        static_cast<std::uint64_t>(label) * static_cast<std::uint64_t>(spec.signature_size) +
        static_cast<std::uint64_t>(j);
    return static_cast<col_t>(hash64(seed ^ kSignatureSalt, c) %
                              static_cast<std::uint64_t>(spec.num_features));
  }
  col_t related(col_t label, index_t j) const {
    const std::uint64_t c =
        static_cast<std::uint64_t>(label) * static_cast<std::uint64_t>(spec.related_labels) +
        static_cast<std::uint64_t>(j);
    return zipf_label(unit(hash64(seed ^ kRelatedSalt, c)));
  }
  // idf-like weight in [1, 3]: rarer noise features weigh more.
  float idf(col_t feature) const {
    const double rank = static_cast<double>(feature_perm.inverse(feature));
    return static_cast<float>(1.0 + 2.0 * std::log1p(rank) /
                                        std::log1p(static_cast<double>(spec.num_features)));
  }
};

struct Block {
  std::vector<index_t> x_counts, y_counts;
  std::vector<col_t> x_indices, y_indices;
  std::vector<float> x_values;
};

// Per-thread scratch of generate_row: distinct-feature marks and the decoy labels.
struct RowScratch {
  std::vector<std::uint32_t> mark;
  std::uint32_t epoch = 0;
  std::vector<col_t> decoys;
};

void generate_row(const Model& m, std::uint64_t row_id, Block* out, std::vector<col_t>* draws,
                  RowScratch* scratch) {
  const SyntheticSpec& s = m.spec;
  SplitMix64 rng(hash64(m.seed ^ kRowSalt, row_id));

  // Labels: 1 + Poisson(avg - 1) distinct ids.
  const index_t want_labels = std::min<index_t>(s.num_labels, 1 + poisson(s.avg_labels - 1.0, rng));
  const std::size_t label_begin = out->y_indices.size();
  index_t have = 0;
  for (index_t attempt = 0; have < want_labels && attempt < 50 * want_labels; ++attempt) {
    col_t cand;
    if (have > 0 && unit(rng()) < s.label_correlation) {
      const col_t base = out->y_indices[label_begin + rng() % static_cast<std::uint64_t>(have)];
      cand = m.related(base,
                       static_cast<index_t>(rng() % static_cast<std::uint64_t>(s.related_labels)));
    } else {
      cand = m.zipf_label(unit(rng()));
    }
    const auto first = out->y_indices.begin() + static_cast<std::ptrdiff_t>(label_begin);
    if (std::find(first, out->y_indices.end(), cand) != out->y_indices.end()) continue;
    out->y_indices.push_back(cand);
    ++have;
  }
  std::sort(out->y_indices.begin() + static_cast<std::ptrdiff_t>(label_begin),
            out->y_indices.end());
  const std::vector<col_t> labels(out->y_indices.begin() + static_cast<std::ptrdiff_t>(label_begin),
                                  out->y_indices.end());

  // Features: log-normal count of distinct ids; signature draws first, then noise draws until
  // the count is reached. Repeated draws raise the term count (tf).
  const double u1 = std::max(unit(rng()), 1e-300), u2 = unit(rng());
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  const double factor = std::exp(s.nnz_spread * z - 0.5 * s.nnz_spread * s.nnz_spread);
  const index_t want_nnz = std::clamp<index_t>(std::llround(s.avg_nnz * factor), 1, s.num_features);
  draws->clear();
  // Distinct ids are tracked with per-thread epoch marks (O(1) per draw, no sorting); the
  // marks only count, so the output stays a pure function of (seed, row).
  if (++scratch->epoch == 0) {
    std::fill(scratch->mark.begin(), scratch->mark.end(), 0u);
    scratch->epoch = 1;
  }
  index_t have_nnz = 0;
  const auto take = [&](col_t f) {
    draws->push_back(f);
    if (scratch->mark[static_cast<std::size_t>(f)] != scratch->epoch) {
      scratch->mark[static_cast<std::size_t>(f)] = scratch->epoch;
      ++have_nnz;
    }
  };
  const auto sig_draws = static_cast<index_t>(std::llround(s.signature_fraction * want_nnz));
  for (index_t i = 0; i < sig_draws && !labels.empty(); ++i) {
    const col_t l = labels[rng() % labels.size()];
    take(
        m.signature(l, static_cast<index_t>(rng() % static_cast<std::uint64_t>(s.signature_size))));
  }
  // Decoys draw from their own stream position only when enabled, so specs without them
  // (every preset that predates them) generate the same bits as before.
  if (s.decoy_fraction > 0.0 && s.decoy_ratio > 0.0 && !labels.empty()) {
    const auto n_decoys =
        std::max<index_t>(1, std::llround(s.decoy_ratio * static_cast<double>(labels.size())));
    scratch->decoys.clear();
    for (index_t i = 0; i < n_decoys; ++i) scratch->decoys.push_back(m.zipf_label(unit(rng())));
    const auto decoy_draws = static_cast<index_t>(std::llround(s.decoy_fraction * want_nnz));
    for (index_t i = 0; i < decoy_draws; ++i) {
      const col_t l = scratch->decoys[rng() % scratch->decoys.size()];
      take(m.signature(l,
                       static_cast<index_t>(rng() % static_cast<std::uint64_t>(s.signature_size))));
    }
  }
  // Cap the noise draws: a near-uniform need over a tiny feature space could take long.
  const index_t cap = 32 * want_nnz + 64;
  for (index_t i = 0; have_nnz < want_nnz && i < cap; ++i) {
    take(static_cast<col_t>(m.feature_perm.forward(m.feature_zipf.rank(unit(rng())))));
  }
  std::sort(draws->begin(), draws->end());
  const std::size_t feat_begin = out->x_indices.size();
  double norm2 = 0.0;
  for (std::size_t i = 0; i < draws->size();) {
    std::size_t j = i;
    while (j < draws->size() && (*draws)[j] == (*draws)[i]) ++j;
    const col_t f = (*draws)[i];
    float v = 1.0f;
    if (!s.binary_values) v = (1.0f + std::log(static_cast<float>(j - i))) * m.idf(f);
    out->x_indices.push_back(f);
    out->x_values.push_back(v);
    norm2 += static_cast<double>(v) * v;
    i = j;
  }
  if (!s.binary_values && norm2 > 0.0) {
    const auto inv = static_cast<float>(1.0 / std::sqrt(norm2));
    for (std::size_t k = feat_begin; k < out->x_values.size(); ++k) out->x_values[k] *= inv;
  }
  out->x_counts.push_back(static_cast<index_t>(out->x_indices.size() - feat_begin));
  out->y_counts.push_back(static_cast<index_t>(labels.size()));
}

// Generates rows with global ids [first_row, first_row + rows) into one Dataset.
Dataset generate_split(const Model& m, std::uint64_t first_row, index_t rows) {
  const index_t num_blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<Block> blocks(static_cast<std::size_t>(num_blocks));
  tbb::enumerable_thread_specific<RowScratch> scratches;
  tbb::parallel_for(index_t{0}, num_blocks, [&](index_t b) {
    Block& blk = blocks[static_cast<std::size_t>(b)];
    std::vector<col_t> draws;
    RowScratch& scratch = scratches.local();
    if (scratch.mark.empty())
      scratch.mark.assign(static_cast<std::size_t>(m.spec.num_features), 0u);
    const index_t begin = b * kRowsPerBlock, end = std::min(rows, begin + kRowsPerBlock);
    for (index_t r = begin; r < end; ++r) {
      generate_row(m, first_row + static_cast<std::uint64_t>(r), &blk, &draws, &scratch);
    }
  });
  std::vector<index_t> x_off(blocks.size() + 1, 0), y_off(blocks.size() + 1, 0);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    x_off[b + 1] = x_off[b] + static_cast<index_t>(blocks[b].x_indices.size());
    y_off[b + 1] = y_off[b] + static_cast<index_t>(blocks[b].y_indices.size());
  }
  Dataset d;
  d.num_features = m.spec.num_features;
  d.num_labels = m.spec.num_labels;
  d.x_indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  d.y_indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  // Reserved (untouched) storage filled block by block, each block freed once appended: the
  // peak is about one copy of the data instead of two (the blocks plus the Dataset).
  d.x_indices.reserve(static_cast<std::size_t>(x_off.back()));
  d.x_values.reserve(static_cast<std::size_t>(x_off.back()));
  d.y_indices.reserve(static_cast<std::size_t>(y_off.back()));
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    Block blk = std::move(blocks[b]);
    index_t xo = x_off[b], yo = y_off[b];
    const index_t r0 = static_cast<index_t>(b) * kRowsPerBlock;
    for (std::size_t i = 0; i < blk.x_counts.size(); ++i) {
      xo += blk.x_counts[i];
      yo += blk.y_counts[i];
      d.x_indptr[static_cast<std::size_t>(r0) + i + 1] = xo;
      d.y_indptr[static_cast<std::size_t>(r0) + i + 1] = yo;
    }
    d.x_indices.insert(d.x_indices.end(), blk.x_indices.begin(), blk.x_indices.end());
    d.x_values.insert(d.x_values.end(), blk.x_values.begin(), blk.x_values.end());
    d.y_indices.insert(d.y_indices.end(), blk.y_indices.begin(), blk.y_indices.end());
  }
  return d;
}

void check_spec(const SyntheticSpec& s) {
  constexpr index_t kMaxIds = index_t{1} << 31;
  HETSGD_CHECK(s.train_rows >= 0 && s.test_rows >= 0, "synthetic '" << s.name << "': negative rows "
                                                                    << s.train_rows << "/"
                                                                    << s.test_rows);
  HETSGD_CHECK(
      s.num_features >= 1 && s.num_features < kMaxIds,
      "synthetic '" << s.name << "': num_features " << s.num_features << " outside [1, 2^31)");
  HETSGD_CHECK(s.num_labels >= 1 && s.num_labels < kMaxIds,
               "synthetic '" << s.name << "': num_labels " << s.num_labels << " outside [1, 2^31)");
  HETSGD_CHECK(s.avg_nnz >= 1.0, "synthetic '" << s.name << "': avg_nnz " << s.avg_nnz << " < 1");
  HETSGD_CHECK(s.avg_labels >= 1.0,
               "synthetic '" << s.name << "': avg_labels " << s.avg_labels << " < 1");
  HETSGD_CHECK(s.label_power_law_exponent >= 0.0 && s.feature_power_law_exponent >= 0.0,
               "synthetic '" << s.name << "': negative power-law exponent");
  HETSGD_CHECK(s.signature_size >= 1,
               "synthetic '" << s.name << "': signature_size " << s.signature_size << " < 1");
  HETSGD_CHECK(s.related_labels >= 1,
               "synthetic '" << s.name << "': related_labels " << s.related_labels << " < 1");
  HETSGD_CHECK(s.signature_fraction >= 0.0 && s.signature_fraction <= 1.0,
               "synthetic '" << s.name << "': signature_fraction " << s.signature_fraction
                             << " outside [0, 1]");
  HETSGD_CHECK(s.label_correlation >= 0.0 && s.label_correlation <= 1.0,
               "synthetic '" << s.name << "': label_correlation " << s.label_correlation
                             << " outside [0, 1]");
  HETSGD_CHECK(s.decoy_fraction >= 0.0 && s.decoy_fraction <= 1.0 - s.signature_fraction + 1e-12,
               "synthetic '" << s.name << "': decoy_fraction " << s.decoy_fraction
                             << " outside [0, 1 - signature_fraction = "
                             << 1.0 - s.signature_fraction << "]");
  HETSGD_CHECK(s.decoy_ratio >= 0.0,
               "synthetic '" << s.name << "': decoy_ratio " << s.decoy_ratio << " < 0");
  HETSGD_CHECK(s.nnz_spread >= 0.0,
               "synthetic '" << s.name << "': nnz_spread " << s.nnz_spread << " < 0");
}

}  // namespace

std::pair<Dataset, Dataset> generate_synthetic(const SyntheticSpec& spec, std::uint64_t seed) {
  check_spec(spec);
  const Model model(spec, seed);
  // Test rows continue the row counter of the training rows: same distribution, new points.
  Dataset train = generate_split(model, 0, spec.train_rows);
  Dataset test = generate_split(model, static_cast<std::uint64_t>(spec.train_rows), spec.test_rows);
  return {std::move(train), std::move(test)};
}

Dataset power_law_batch(index_t rows, index_t num_labels, std::uint64_t seed, index_t num_features,
                        double avg_nnz) {
  SyntheticSpec spec;
  spec.name = "power_law_batch";
  spec.train_rows = rows;
  spec.test_rows = 0;
  spec.num_labels = num_labels;
  spec.num_features = num_features;
  spec.avg_nnz = std::min(avg_nnz, static_cast<double>(num_features));
  return std::move(generate_synthetic(spec, seed).first);
}

}  // namespace hetsgd::datasets
