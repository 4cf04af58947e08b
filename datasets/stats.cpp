#include "datasets/stats.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <vector>

#include "core/memory_budget.h"

namespace hetsgd::datasets {
namespace {

// Ids spaces up to this size always get a dense table (it is small whatever the data).
constexpr std::uint64_t kDenseSlack = 1 << 20;

// A dense table of `space` entries is used when it is at most about the size of the data.
bool dense_ok(index_t space, index_t stored) {
  return static_cast<std::uint64_t>(space) <= 4 * static_cast<std::uint64_t>(stored) + kDenseSlack;
}

}  // namespace

DatasetStats compute_stats(const Dataset& d) {
  DatasetStats s;
  copy_csr_counts(view_of(d), &s);
  if (s.rows > 0) {
    s.avg_nnz = static_cast<double>(s.nnz) / static_cast<double>(s.rows);
    s.avg_labels = static_cast<double>(s.label_nnz) / static_cast<double>(s.rows);
    if (s.num_features > 0) {
      s.density = static_cast<double>(s.nnz) /
                  (static_cast<double>(s.rows) * static_cast<double>(s.num_features));
    }
  }
  s.min_nnz = s.rows > 0 ? std::numeric_limits<index_t>::max() : 0;
  for (index_t r = 0; r < s.rows; ++r) {
    const index_t n = d.x_indptr[r + 1] - d.x_indptr[r];
    const index_t l = d.y_indptr[r + 1] - d.y_indptr[r];
    s.min_nnz = std::min(s.min_nnz, n);
    s.max_nnz = std::max(s.max_nnz, n);
    s.max_labels = std::max(s.max_labels, l);
    s.rows_without_labels += l == 0;
    s.rows_without_features += n == 0;
  }

  // The id spaces come from a header and may be far larger than the data (2^31 labels over
  // three rows): a dense table per id is used only when it is no bigger than the data itself,
  // otherwise the ids present are sorted, so memory stays O(nnz + label_nnz) either way.
  bool binary = true;
  float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
  for (index_t k = 0; k < s.nnz; ++k) {
    const float v = d.x_values[k];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    binary = binary && v == 1.0f;
  }
  s.binary_values = s.nnz > 0 && binary;
  s.min_value = s.nnz > 0 ? lo : 0.0;
  s.max_value = s.nnz > 0 ? hi : 0.0;
  check_memory(
      saturating_mul(static_cast<std::uint64_t>(s.nnz + s.label_nnz) + 2 * kDenseSlack, 8),
      "data stats (" + std::to_string(s.nnz) + " nnz, " + std::to_string(s.label_nnz) + " labels)");
  if (dense_ok(d.num_features, s.nnz)) {
    std::vector<char> feature_seen(static_cast<std::size_t>(d.num_features), 0);
    for (index_t k = 0; k < s.nnz; ++k) feature_seen[static_cast<std::size_t>(d.x_indices[k])] = 1;
    s.features_used = std::count(feature_seen.begin(), feature_seen.end(), 1);
  } else {
    std::vector<col_t> ids(d.x_indices);
    std::sort(ids.begin(), ids.end());
    s.features_used = std::unique(ids.begin(), ids.end()) - ids.begin();
  }

  // Row counts per label, over the labels that occur (zeros would be skipped anyway).
  std::vector<index_t> freq;
  if (dense_ok(d.num_labels, s.label_nnz)) {
    freq.assign(static_cast<std::size_t>(d.num_labels), 0);
    for (col_t l : d.y_indices) ++freq[static_cast<std::size_t>(l)];
  } else {
    std::vector<col_t> ids(d.y_indices);
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size();) {
      std::size_t j = i;
      while (j < ids.size() && ids[j] == ids[i]) ++j;
      freq.push_back(static_cast<index_t>(j - i));
      i = j;
    }
  }
  std::sort(freq.begin(), freq.end(), std::greater<>());
  for (index_t f : freq) {
    if (f == 0) break;
    ++s.labels_used;
    s.tail_labels_le5 += f <= 5;
  }
  if (!freq.empty()) s.max_label_frequency = freq.front();
  if (s.labels_used > 0) {
    const auto mid = static_cast<std::size_t>(s.labels_used / 2);
    s.median_label_frequency = s.labels_used % 2 == 1
                                   ? static_cast<double>(freq[mid])
                                   : 0.5 * static_cast<double>(freq[mid - 1] + freq[mid]);
  }
  if (s.label_nnz > 0) {
    const index_t head = std::max<index_t>(1, s.num_labels / 100);
    index_t head_sum = 0;
    for (index_t i = 0; i < head && i < static_cast<index_t>(freq.size()); ++i) head_sum += freq[i];
    s.head_1pct_share = static_cast<double>(head_sum) / static_cast<double>(s.label_nnz);
  }
  return s;
}

std::string format_stats(const DatasetStats& s) {
  std::string out;
  char line[160];
  const auto add_int = [&](const char* key, index_t v) {
    std::snprintf(line, sizeof(line), "%-24s %lld\n", key, static_cast<long long>(v));
    out += line;
  };
  const auto add_real = [&](const char* key, double v) {
    std::snprintf(line, sizeof(line), "%-24s %.6g\n", key, v);
    out += line;
  };
  add_int("rows:", s.rows);
  add_int("num_features:", s.num_features);
  add_int("num_labels:", s.num_labels);
  add_int("nnz:", s.nnz);
  add_real("avg_nnz:", s.avg_nnz);
  add_int("min_nnz:", s.min_nnz);
  add_int("max_nnz:", s.max_nnz);
  add_real("density:", s.density);
  add_int("features_used:", s.features_used);
  add_real("min_value:", s.min_value);
  add_real("max_value:", s.max_value);
  out += std::string("binary_values:           ") + (s.binary_values ? "yes" : "no") + "\n";
  add_int("label_nnz:", s.label_nnz);
  add_real("avg_labels:", s.avg_labels);
  add_int("max_labels:", s.max_labels);
  add_int("rows_without_labels:", s.rows_without_labels);
  add_int("rows_without_features:", s.rows_without_features);
  add_int("labels_used:", s.labels_used);
  add_int("max_label_frequency:", s.max_label_frequency);
  add_real("median_label_frequency:", s.median_label_frequency);
  add_real("head_1pct_share:", s.head_1pct_share);
  add_int("tail_labels_le5:", s.tail_labels_le5);
  return out;
}

}  // namespace hetsgd::datasets
