/// \file datasets/stats.h
/// Shape and label-distribution statistics of a Dataset (`hetsgd data stats`).
#pragma once

#include <string>

#include "core/dataset.h"
#include "core/types.h"

namespace hetsgd::datasets {

/// Summary of one Dataset. Frequencies count rows (a label occurs at most once per row).
struct DatasetStats {
  index_t rows = 0;                     ///< number of points
  index_t num_features = 0;             ///< width of the feature space
  index_t num_labels = 0;               ///< size of the label space
  index_t nnz = 0;                      ///< stored feature values
  index_t label_nnz = 0;                ///< stored labels (sum of labels per row)
  double avg_nnz = 0.0;                 ///< nnz / rows
  index_t min_nnz = 0;                  ///< fewest features in a row
  index_t max_nnz = 0;                  ///< most features in a row
  double density = 0.0;                 ///< nnz / (rows * num_features)
  double avg_labels = 0.0;              ///< label_nnz / rows
  index_t max_labels = 0;               ///< most labels in a row
  index_t rows_without_labels = 0;      ///< rows with an empty label set
  index_t rows_without_features = 0;    ///< rows with no stored feature
  index_t features_used = 0;            ///< distinct features that occur at least once
  index_t labels_used = 0;              ///< distinct labels that occur at least once
  index_t max_label_frequency = 0;      ///< rows carrying the most frequent label
  double median_label_frequency = 0.0;  ///< median rows per label, over labels_used
  /// Share of all label occurrences taken by the most frequent 1% of the label space
  /// (at least one label): large for power-law label distributions.
  double head_1pct_share = 0.0;
  index_t tail_labels_le5 = 0;  ///< labels used by 1..5 rows (the "tail")
  double min_value = 0.0;       ///< smallest stored feature value (0 when nnz == 0)
  double max_value = 0.0;       ///< largest stored feature value
  bool binary_values = false;   ///< every stored value is exactly 1
};

/// Computes every field of DatasetStats in O(nnz + label_nnz + num_labels) time.
DatasetStats compute_stats(const Dataset& data);

/// Multi-line `key: value` rendering, one statistic per line, for terminals and logs.
std::string format_stats(const DatasetStats& stats);

}  // namespace hetsgd::datasets
