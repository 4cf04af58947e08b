/// \file datasets/synthetic.h
/// Synthetic extreme multi-label datasets with planted, learnable structure.
///
/// Shaped like the real benchmark sets (rows, features, labels, nnz per row, labels per row,
/// power-law label frequencies) so that throughput numbers transfer, and generated from a
/// model a classifier can learn so that P@k is meaningful:
/// - label popularity follows a Zipf law over a fixed random permutation of the label ids;
/// - labels co-occur: after the first label of a point, each further label is, with
///   probability `label_correlation`, one of the `related_labels` fixed partners of a label
///   already chosen (partners are themselves Zipf-drawn), otherwise a fresh Zipf draw;
/// - each label owns `signature_size` "signature" features; a share `signature_fraction` of a
///   point's feature draws comes from the signatures of its labels, the rest is noise drawn
///   from a Zipf law over all features (a fixed random permutation of the feature ids);
/// - optionally, a share `decoy_fraction` of the draws comes from the signatures of
///   `decoy_ratio` x (labels of the point) "decoy" labels the point does not carry (Zipf-drawn
///   like real labels), so a signature feature is evidence for a label, not proof: the large
///   presets use this to keep a trained model's P@1 well below 1;
/// - values are 1 (`binary_values`) or tf-idf-like: (1 + log count) x an idf that grows with
///   the noise rank of the feature, then the row is L2-normalised.
/// Every random number is a pure function of (seed, row) or (seed, label), so the output is
/// identical for any thread count; rows are generated in parallel with oneTBB.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dataset.h"
#include "core/types.h"

namespace hetsgd::datasets {

/// Parameters of generate_synthetic(). The defaults describe a small, easy dataset.
struct SyntheticSpec {
  std::string name = "custom";              ///< preset name, for logs
  index_t train_rows = 1000;                ///< rows of the training split
  index_t test_rows = 250;                  ///< rows of the test split (same distribution)
  index_t num_features = 1000;              ///< width of the feature space
  index_t num_labels = 100;                 ///< size of the label space
  double avg_nnz = 20.0;                    ///< mean distinct features per row (>= 1)
  double avg_labels = 2.0;                  ///< mean labels per row (>= 1): 1 + Poisson(avg - 1)
  double label_power_law_exponent = 1.0;    ///< Zipf exponent of label popularity (>= 0)
  double feature_power_law_exponent = 1.0;  ///< Zipf exponent of noise features (>= 0)
  index_t signature_size = 12;              ///< signature features per label (>= 1)
  double signature_fraction = 0.6;          ///< share of feature draws taken from label signatures
  double label_correlation = 0.5;           ///< probability that a further label is a related one
  index_t related_labels = 8;               ///< fixed related partners per label (>= 1)
  double nnz_spread = 0.5;                  ///< sigma of the log-normal spread of nnz per row
  double decoy_fraction = 0.0;  ///< share of feature draws from decoy signatures, [0, 1 - sig.]
  double decoy_ratio = 0.0;     ///< decoy labels per label of the point (>= 0)
  bool binary_values = false;   ///< all values 1 (bag of words) instead of tf-idf
};

/// The spec of a named preset with its full row counts: "bibtex" (4880/2515 rows, 1836
/// features, 159 labels), "delicious" (12920/3185, 500, 983), "eurlex-4k" (15539/3809, 5000,
/// 3993), "amazon-670k" (490449/153025, 135909, 670091), "wiki10-31k", "amazoncat-13k",
/// "delicious-200k", "wiki-500k", "amazon-3m" (1717899/742507, 337067, 2812281), or "tiny"
/// (512/128, 256, 32: for unit tests); datasets/synthetic_presets.cpp gives every shape.
/// Throws InvalidArgument listing the known names for any other name.
SyntheticSpec synthetic_preset(const std::string& name);

/// Names accepted by synthetic_preset(), in a stable order.
std::vector<std::string> synthetic_preset_names();

/// `spec` with both row counts multiplied by `row_scale` (rounded, at least 1 row each); the
/// feature and label spaces are kept. For small test and benchmark versions of a preset.
SyntheticSpec scale_rows(SyntheticSpec spec, double row_scale);

/// `spec` with explicit row counts.
SyntheticSpec with_rows(SyntheticSpec spec, index_t train_rows, index_t test_rows);

/// Generates the (train, test) pair described by `spec`. Deterministic in (spec, seed),
/// independent of the thread count. Throws InvalidArgument when a parameter is outside the
/// range documented on SyntheticSpec.
std::pair<Dataset, Dataset> generate_synthetic(const SyntheticSpec& spec, std::uint64_t seed);

/// A single power-law dataset of `rows` rows over `num_labels` labels (the training split of a
/// default spec resized), handy for kernel and device tests.
Dataset power_law_batch(index_t rows, index_t num_labels, std::uint64_t seed,
                        index_t num_features = 1000, double avg_nnz = 20.0);

}  // namespace hetsgd::datasets
