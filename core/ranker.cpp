#include "core/ranker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/error.h"

namespace hetsgd {

Ranker::Ranker(Device& network) : network_(&network) {}

Ranker::Ranker(Device& network, std::shared_ptr<const LabelForest> forest, double w)
    : network_(&network), forest_(std::move(forest)) {
  if (forest_ != nullptr) {
    const ModelConfig& c = network.config();
    HETSGD_CHECK(!forest_->empty(), "a forest blend needs a grown forest");
    HETSGD_CHECK(c.loss == Loss::kSoftmax,
                 "a label forest blends with a softmax model's probabilities, this model's loss "
                 "is not softmax");
    HETSGD_CHECK(forest_->num_labels() == c.num_labels && forest_->num_features() == c.num_features,
                 "the forest's shape " << forest_->num_features() << " x " << forest_->num_labels()
                                       << " differs from the model's " << c.num_features << " x "
                                       << c.num_labels);
  }
  set_forest_weight(w);
}

void Ranker::set_forest_weight(double w) {
  HETSGD_CHECK(w >= 0.0 && w <= kMaxForestWeight,
               "forest weight " << w << " outside [0, " << kMaxForestWeight << "]");
  weight_ = forest_ != nullptr ? w : 0.0;
}

float Ranker::expert_scores(const CsrBatch& rows, std::vector<float>* probs,
                            std::vector<float>* forest) {
  const index_t L = network_->config().num_labels;
  probs->resize(static_cast<size_t>(rows.rows() * L));
  forest->assign(probs->size(), 0.0f);
  if (forest_ != nullptr) forest_->add_scores(rows, 1.0f, forest->data());
  const float loss = network_->score_all(rows, probs->data());
  // Logits to softmax probabilities, each row shifted by its maximum (stable).
  for (index_t r = 0; r < rows.rows(); ++r) {
    float* s = probs->data() + r * L;
    const float top = *std::max_element(s, s + L);
    double sum = 0.0;
    for (index_t j = 0; j < L; ++j) {
      s[j] = std::exp(s[j] - top);
      sum += s[j];
    }
    const auto inv = static_cast<float>(1.0 / sum);
    for (index_t j = 0; j < L; ++j) s[j] *= inv;
  }
  return loss;
}

void Ranker::top_labels(const float* v, index_t L, int k, col_t* labels) {
  const int kk = static_cast<int>(std::min<index_t>(k, L));
  // A running list, best first: a label enters when it beats the list's last (k is small
  // beside L, so most labels cost one comparison).
  int n = 0;
  for (index_t l = 0; l < L; ++l) {
    if (n == kk && !(v[l] > v[labels[n - 1]])) continue;
    int at = n < kk ? n++ : kk - 1;
    while (at > 0 && v[l] > v[labels[at - 1]]) {
      labels[at] = labels[at - 1];
      --at;
    }
    labels[at] = static_cast<col_t>(l);
  }
  for (int j = kk; j < k; ++j) labels[j] = -1;
}

void Ranker::blend_topk(const float* probs, const float* forest, index_t rows, index_t L, double w,
                        int k, col_t* labels, float* scores) {
  const auto wf = static_cast<float>(w);
  std::vector<float> out(static_cast<size_t>(L));
  for (index_t r = 0; r < rows; ++r) {
    // ln of the unnormalised product p^(1-w) (f + floor)^w; a probability that underflowed
    // to 0 stays the lowest score rather than -inf.
    float top = -std::numeric_limits<float>::infinity();
    for (index_t l = 0; l < L; ++l) {
      const float v = (1.0f - wf) * std::log(std::max(probs[r * L + l], 1e-30f)) +
                      wf * std::log(forest[r * L + l] + kForestFloor);
      out[static_cast<size_t>(l)] = v;
      top = std::max(top, v);
    }
    double z = 0.0;
    for (index_t l = 0; l < L; ++l)
      z += std::exp(static_cast<double>(out[static_cast<size_t>(l)] - top));
    col_t* lab = labels + r * k;
    top_labels(out.data(), L, k, lab);
    for (int j = 0; j < k; ++j) {
      scores[r * k + j] =
          lab[j] >= 0
              ? static_cast<float>(
                    std::exp(static_cast<double>(out[static_cast<size_t>(lab[j])] - top)) / z)
              : 0.0f;
    }
  }
}

float Ranker::predict_probabilities(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  if (network_->config().loss == Loss::kSoftmax) return blended_topk(batch, k, labels, scores);
  const float loss = network_->predict_topk(batch, k, labels, scores);
  const index_t n = batch.rows() * k;
  for (index_t i = 0; i < n; ++i) scores[i] = 1.0f / (1.0f + std::exp(-scores[i]));
  return loss;
}

float Ranker::predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  if (network_only()) return network_->predict_topk(batch, k, labels, scores);
  return blended_topk(batch, k, labels, scores);
}

float Ranker::blended_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  const index_t L = network_->config().num_labels;
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

LoadedRanker load_ranker(const SavedModel& model, const RankerDevice& make) {
  LoadedRanker out;
  out.device = make(model.config);
  out.device->write_params(model.params.data());
  out.ranker = std::make_unique<Ranker>(*out.device, model.forest, model.forest_weight);
  return out;
}

}  // namespace hetsgd
