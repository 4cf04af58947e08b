#include "core/forest/blend_device.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace hetsgd {
namespace {}  // namespace

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

float ForestBlendDevice::expert_scores(const CsrBatch& rows, std::vector<float>* probs,
                                       std::vector<float>* forest) {
  const index_t L = config().num_labels;
  probs->assign(static_cast<size_t>(rows.rows() * L), 0.0f);
  forest->assign(probs->size(), 0.0f);
  forest_->add_scores(rows, 1.0f, forest->data());
  all_labels_.resize(static_cast<size_t>(rows.rows() * L));
  all_scores_.resize(all_labels_.size());
  const float loss =
      inner().predict_topk(rows, static_cast<int>(L), all_labels_.data(), all_scores_.data());
  for (index_t r = 0; r < rows.rows(); ++r) {
    // Sorted best first: the first score is the maximum (a stable softmax).
    const float* s = all_scores_.data() + r * L;
    const col_t* id = all_labels_.data() + r * L;
    double sum = 0.0;
    for (index_t j = 0; j < L; ++j) sum += std::exp(static_cast<double>(s[j] - s[0]));
    for (index_t j = 0; j < L; ++j)
      (*probs)[static_cast<size_t>(r * L + id[j])] =
          static_cast<float>(std::exp(static_cast<double>(s[j] - s[0])) / sum);
  }
  return loss;
}

void ForestBlendDevice::blend_topk(const float* probs, const float* forest, index_t rows, index_t L,
                                   double w, int k, col_t* labels, float* scores) {
  const int kk = static_cast<int>(std::min<index_t>(k, L));
  const auto wf = static_cast<float>(w);
  std::vector<float> out(static_cast<size_t>(L));
  std::vector<index_t> order(static_cast<size_t>(L));
  for (index_t r = 0; r < rows; ++r) {
    // ln of the unnormalised product p^(1-w) (f + floor)^w; a probability that underflowed
    // to 0 stays the lowest score rather than -inf.
    float top = -std::numeric_limits<float>::infinity();
    for (index_t l = 0; l < L; ++l) {
      const float v = (1.0f - wf) * std::log(std::max(probs[r * L + l], 1e-30f)) +
                      wf * std::log(forest[r * L + l] + kForestFloor);
      out[static_cast<size_t>(l)] = v;
      order[static_cast<size_t>(l)] = l;
      top = std::max(top, v);
    }
    double z = 0.0;
    for (index_t l = 0; l < L; ++l)
      z += std::exp(static_cast<double>(out[static_cast<size_t>(l)] - top));
    const float* o = out.data();
    std::partial_sort(order.begin(), order.begin() + kk, order.end(),
                      [o](index_t x, index_t y) { return o[x] > o[y] || (o[x] == o[y] && x < y); });
    for (int j = 0; j < k; ++j) {
      const bool has = j < kk;
      labels[r * k + j] = has ? static_cast<col_t>(order[static_cast<size_t>(j)]) : -1;
      scores[r * k + j] =
          has ? static_cast<float>(
                    std::exp(static_cast<double>(o[order[static_cast<size_t>(j)]] - top)) / z)
              : 0.0f;
    }
  }
}

float ForestBlendDevice::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  if (weight_ == 0.0) return inner().predict_topk(batch, k, labels, scores);
  const index_t L = config().num_labels;
  const index_t block = std::max<index_t>(1, kBlendBlock / L);
  double loss = 0.0;
  for (index_t b = 0; b < batch.rows(); b += block) {
    const index_t e = std::min(batch.rows(), b + block);
    slice_rows(batch, b, e, &sub_);
    loss += static_cast<double>(expert_scores(sub_, &probs_, &forest_scores_)) *
            static_cast<double>(e - b);
    blend_topk(probs_.data(), forest_scores_.data(), e - b, L, weight_, k, labels + b * k,
               scores + b * k);
  }
  return batch.rows() > 0 ? static_cast<float>(loss / static_cast<double>(batch.rows())) : 0.0f;
}

}  // namespace hetsgd
