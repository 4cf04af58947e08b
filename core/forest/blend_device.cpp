#include "core/forest/blend_device.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hetsgd {
namespace {
// Scores held at once: the rows of a call are blended in blocks of this many scores.
constexpr index_t kBlendBlock = index_t{1} << 22;
}  // namespace

ForestBlendDevice::ForestBlendDevice(std::unique_ptr<Device> inner,
                                     std::shared_ptr<const LabelForest> forest, double w)
    : ForwardingDevice(std::move(inner)), forest_(std::move(forest)) {
  HETSGD_CHECK(forest_ != nullptr && !forest_->empty(), "a forest blend needs a grown forest");
  HETSGD_CHECK(config().loss == Loss::kSoftmax,
               "a label forest blends with a softmax model's probabilities, this model's loss is "
               "not softmax");
  HETSGD_CHECK(forest_->num_labels() == config().num_labels &&
                   forest_->num_features() == config().num_features,
               "the forest's shape " << forest_->num_features() << " x " << forest_->num_labels()
                                     << " differs from the model's " << config().num_features
                                     << " x " << config().num_labels);
  set_weight(w);
}

void ForestBlendDevice::set_forest(std::shared_ptr<const LabelForest> forest) {
  HETSGD_CHECK(forest != nullptr && forest->num_labels() == forest_->num_labels() &&
                   forest->num_features() == forest_->num_features(),
               "set_forest: a forest of another shape");
  forest_ = std::move(forest);
}

void ForestBlendDevice::set_weight(double w) {
  HETSGD_CHECK(w >= 0.0 && w <= kMaxForestWeight,
               "forest weight " << w << " outside [0, " << kMaxForestWeight << "]");
  weight_ = w;
}

float ForestBlendDevice::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  if (weight_ == 0.0) return inner().predict_topk(batch, k, labels, scores);
  const index_t L = config().num_labels;
  const int kk = static_cast<int>(std::min<index_t>(k, L));
  const index_t block = std::max<index_t>(1, kBlendBlock / L);
  double loss = 0.0;
  const auto w = static_cast<float>(weight_);
  for (index_t b = 0; b < batch.rows(); b += block) {
    const index_t e = std::min(batch.rows(), b + block);
    const index_t n = e - b;
    slice_rows(batch, b, e, &sub_);
    all_labels_.resize(static_cast<size_t>(n * L));
    all_scores_.resize(all_labels_.size());
    blend_.assign(all_labels_.size(), 0.0f);
    loss += static_cast<double>(inner().predict_topk(sub_, static_cast<int>(L), all_labels_.data(),
                                                     all_scores_.data())) *
            static_cast<double>(n);
    for (index_t r = 0; r < n; ++r) {
      // Sorted best first: the first score is the maximum (a stable softmax).
      const float* s = all_scores_.data() + r * L;
      const col_t* id = all_labels_.data() + r * L;
      double sum = 0.0;
      for (index_t j = 0; j < L; ++j) sum += std::exp(static_cast<double>(s[j] - s[0]));
      float* out = blend_.data() + r * L;
      for (index_t j = 0; j < L; ++j) {
        out[id[j]] =
            (1.0f - w) * static_cast<float>(std::exp(static_cast<double>(s[j] - s[0])) / sum);
      }
    }
    forest_->add_scores(sub_, w, blend_.data());
    order_.resize(static_cast<size_t>(L));
    for (index_t r = 0; r < n; ++r) {
      const float* out = blend_.data() + r * L;
      for (index_t j = 0; j < L; ++j) order_[static_cast<size_t>(j)] = j;
      std::partial_sort(
          order_.begin(), order_.begin() + kk, order_.end(),
          [out](index_t x, index_t y) { return out[x] > out[y] || (out[x] == out[y] && x < y); });
      for (int j = 0; j < k; ++j) {
        const bool has = j < kk;
        labels[(b + r) * k + j] = has ? static_cast<col_t>(order_[static_cast<size_t>(j)]) : -1;
        scores[(b + r) * k + j] = has ? out[order_[static_cast<size_t>(j)]] : 0.0f;
      }
    }
  }
  return batch.rows() > 0 ? static_cast<float>(loss / static_cast<double>(batch.rows())) : 0.0f;
}

}  // namespace hetsgd
