/// \file tools/bench/bench_data.h
/// Random inputs for the micro-benchmarks: CSR batches shaped like XMC data and dense arrays.
///
/// Feature and label ids follow a skewed (power-law-like) distribution, as in real XMC sets,
/// so that a batch touches a realistic number of distinct first-layer rows. Everything is
/// deterministic from a seed, so two runs benchmark identical work.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/random.h"
#include "core/types.h"

namespace hetsgd::bench {

/// The batch rows and hidden width of every benchmark, so that their numbers compare.
inline constexpr index_t kBatch = 256;
inline constexpr index_t kHidden = 128;

/// Shape of a synthetic XMC problem (per-row averages; actual counts vary +-50%).
struct Shape {
  index_t features;        ///< d
  index_t labels;          ///< L
  index_t nnz_per_row;     ///< mean stored features per row
  index_t labels_per_row;  ///< mean labels per row
};

/// Shapes of the real sets the engine targets (EURLex-4K, Amazon-670K scaled to 1/8 of the
/// labels so one benchmark fits in memory and seconds), plus bibtex and delicious.
inline constexpr Shape kBibtex{1836, 159, 68, 2};
inline constexpr Shape kDelicious{500, 983, 18, 19};
inline constexpr Shape kEurlex{5000, 3993, 236, 5};
inline constexpr Shape kAmazonEighth{135909, 83740, 71, 5};

/// Shape by index (for benchmark arguments): 0 bibtex, 1 delicious, 2 eurlex, 3 amazon/8.
inline Shape shape_by_index(int i) {
  switch (i) {
    case 0:
      return kBibtex;
    case 1:
      return kDelicious;
    case 2:
      return kEurlex;
    default:
      return kAmazonEighth;
  }
}

/// Skewed id in [0, n): u^3 concentrates mass on small ids (a cheap Zipf stand-in).
inline col_t skewed_id(SplitMix64& rng, index_t n) {
  const double u = rng.uniform();
  return static_cast<col_t>(std::min<index_t>(n - 1, static_cast<index_t>(u * u * u * n)));
}

/// `rows` random rows of `shape`: sorted unique feature ids with values in (0, 1], and
/// unique label ids.
inline Dataset make_data(const Shape& shape, index_t rows, std::uint64_t seed) {
  SplitMix64 rng(seed);
  Dataset d;
  d.num_features = shape.features;
  d.num_labels = shape.labels;
  std::vector<col_t> ids;
  for (index_t r = 0; r < rows; ++r) {
    const index_t nnz =
        std::max<index_t>(1, static_cast<index_t>(shape.nnz_per_row * (0.5 + rng.uniform())));
    ids.clear();
    for (index_t k = 0; k < nnz; ++k) ids.push_back(skewed_id(rng, shape.features));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (col_t f : ids) {
      d.x_indices.push_back(f);
      d.x_values.push_back(0.05f + 0.95f * rng.uniform());
    }
    d.x_indptr.push_back(static_cast<index_t>(d.x_indices.size()));
    const index_t nl =
        std::max<index_t>(1, static_cast<index_t>(shape.labels_per_row * (0.5 + rng.uniform())));
    ids.clear();
    for (index_t k = 0; k < nl; ++k) ids.push_back(skewed_id(rng, shape.labels));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    d.y_indices.insert(d.y_indices.end(), ids.begin(), ids.end());
    d.y_indptr.push_back(static_cast<index_t>(d.y_indices.size()));
  }
  return d;
}

/// `n` floats uniform in [-1, 1).
inline std::vector<float> random_floats(index_t n, std::uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i)
    v[i] = 2.0f * uniform01(seed, static_cast<std::uint64_t>(i)) - 1.0f;
  return v;
}

/// The default model (one hidden layer of kHidden) for `shape`, with Adam or SGD.
inline ModelConfig model_for(const Shape& shape, OptimizerKind opt = OptimizerKind::kAdam) {
  ModelConfig c;
  c.num_features = shape.features;
  c.num_labels = shape.labels;
  c.hidden = {kHidden};
  c.optimizer.kind = opt;
  c.seed = 7;
  return c;
}

}  // namespace hetsgd::bench
