// LinearExpert's bytes (core/linear/README.md, "Bytes"): "HLINEAR1", int64 num_features,
// num_labels, entries; the float biases (num_labels); int64 offsets (num_features + 1, from 0
// to entries, by feature); the labels (uint16 where every id fits, else int32) and the float
// weights (entries each). The model file's checksum covers them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/byte_cursor.h"
#include "core/error.h"
#include "core/linear/linear_expert.h"

namespace hetsgd {
namespace {

constexpr char kLinearMagic[8] = {'H', 'L', 'I', 'N', 'E', 'A', 'R', '1'};
constexpr std::size_t kMagicBytes = sizeof kLinearMagic;
// Label ids below this are stored in 2 bytes.
constexpr std::int64_t kNarrowIds = std::int64_t{1} << 16;

}  // namespace

std::int64_t LinearExpert::bytes() const {
  const std::int64_t label = num_labels_ < kNarrowIds ? 2 : 4;
  return static_cast<std::int64_t>(kMagicBytes) + 3 * 8 +
         static_cast<std::int64_t>(bias_.size()) * 4 +
         static_cast<std::int64_t>(feature_begin_.size()) * 8 + weights() * (label + 4);
}

void LinearExpert::fit_bytes(std::int64_t max_bytes) {
  const std::int64_t per_entry = num_labels_ < kNarrowIds ? 6 : 8;
  const std::int64_t over = bytes() - max_bytes;
  if (over <= 0) return;
  const std::int64_t drop = std::min(weights(), (over + per_entry - 1) / per_entry);
  if (drop <= 0) return;
  // The magnitude the kept weights reach: the drop-th smallest; equals at the threshold are
  // dropped in entry order (feature, then label), so the result does not depend on the sort.
  std::vector<float> mags(weights_.size());
  for (size_t k = 0; k < mags.size(); ++k) mags[k] = std::fabs(weights_[k]);
  std::vector<float> sorted = mags;
  std::nth_element(sorted.begin(), sorted.begin() + (drop - 1), sorted.end());
  const float threshold = sorted[static_cast<size_t>(drop - 1)];
  std::int64_t below = 0;
  for (float m : mags) below += m < threshold;
  std::int64_t equal_drops = drop - below;
  std::vector<std::int64_t> begin(feature_begin_.size(), 0);
  size_t out = 0;
  for (size_t f = 0; f + 1 < feature_begin_.size(); ++f) {
    for (std::int64_t k = feature_begin_[f]; k < feature_begin_[f + 1]; ++k) {
      const float m = mags[static_cast<size_t>(k)];
      if (m < threshold || (m == threshold && equal_drops-- > 0)) continue;
      labels_[out] = labels_[static_cast<size_t>(k)];
      weights_[out] = weights_[static_cast<size_t>(k)];
      ++out;
    }
    begin[f + 1] = static_cast<std::int64_t>(out);
  }
  labels_.resize(out);
  weights_.resize(out);
  feature_begin_ = std::move(begin);
}

void LinearExpert::serialize(std::string* out) const {
  out->append(kLinearMagic, kMagicBytes);
  put_bytes(out, static_cast<std::int64_t>(num_features_));
  put_bytes(out, static_cast<std::int64_t>(num_labels_));
  put_bytes(out, weights());
  put_array(out, bias_);
  put_array(out, feature_begin_);
  for (col_t l : labels_) {
    if (num_labels_ < kNarrowIds) {
      put_bytes(out, static_cast<std::uint16_t>(l));
    } else {
      put_bytes(out, static_cast<std::int32_t>(l));
    }
  }
  put_array(out, weights_);
}

LinearExpert LinearExpert::parse(std::string_view bytes, index_t num_features, index_t num_labels,
                                 const std::string& name) {
  if (bytes.size() < kMagicBytes || std::memcmp(bytes.data(), kLinearMagic, kMagicBytes) != 0)
    throw IoError(name + ": linear section: magic 'HLINEAR1' not found");
  ByteCursor c(bytes.substr(kMagicBytes), name, "linear");
  LinearExpert e;
  e.num_features_ = c.get<std::int64_t>("num_features");
  e.num_labels_ = c.get<std::int64_t>("num_labels");
  if (e.num_features_ != num_features || e.num_labels_ != num_labels) {
    c.fail("shape " + std::to_string(e.num_features_) + " x " + std::to_string(e.num_labels_) +
           " differs from the model's " + std::to_string(num_features) + " x " +
           std::to_string(num_labels));
  }
  const auto entries = c.get<std::int64_t>("entries");
  c.get_array(&e.bias_, num_labels, "biases");
  c.get_array(&e.feature_begin_, num_features + 1, "offsets");
  if (num_labels < kNarrowIds) {
    std::vector<std::uint16_t> small;
    c.get_array(&small, entries, "labels");
    e.labels_.assign(small.begin(), small.end());
  } else {
    c.get_array(&e.labels_, entries, "labels");
  }
  c.get_array(&e.weights_, entries, "weights");
  if (c.left() != 0) c.fail(std::to_string(c.left()) + " bytes after the last array");
  if (e.feature_begin_.front() != 0 || e.feature_begin_.back() != entries)
    c.fail("offsets run from " + std::to_string(e.feature_begin_.front()) + " to " +
           std::to_string(e.feature_begin_.back()) + ", expected 0 to " + std::to_string(entries));
  for (size_t f = 0; f + 1 < e.feature_begin_.size(); ++f) {
    if (e.feature_begin_[f + 1] < e.feature_begin_[f])
      c.fail("the offsets of feature " + std::to_string(f) + " decrease");
  }
  for (size_t k = 0; k < e.labels_.size(); ++k) {
    if (e.labels_[k] < 0 || e.labels_[k] >= num_labels || !std::isfinite(e.weights_[k])) {
      c.fail("entry " + std::to_string(k) + " (label " + std::to_string(e.labels_[k]) +
             ", weight " + std::to_string(e.weights_[k]) + ") outside [0, " +
             std::to_string(num_labels) + ") or not finite");
    }
  }
  for (size_t l = 0; l < e.bias_.size(); ++l) {
    if (!std::isfinite(e.bias_[l]))
      c.fail("the bias of label " + std::to_string(l) + " is not finite");
  }
  return e;
}

}  // namespace hetsgd
