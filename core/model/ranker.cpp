#include "core/model/ranker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/error.h"
#include "core/resident.h"

namespace hetsgd {

Ranker::Ranker(Device& network) : network_(&network) {}

Ranker::Ranker(Device& network, std::shared_ptr<const LabelForest> forest, double w)
    : Ranker(network, std::move(forest), w, nullptr, 0.0) {}

namespace {

// An expert (`what`, of `features` x `labels`, `empty` when it holds nothing) may blend with
// `c`: a softmax model of the same shape.
void check_expert(const ModelConfig& c, const char* what, bool empty, index_t features,
                  index_t labels) {
  HETSGD_CHECK(!empty, "a blend needs a trained " << what);
  HETSGD_CHECK(c.loss == Loss::kSoftmax, "a " << what
                                              << " blends with a softmax model's probabilities, "
                                                 "this model's loss is not softmax");
  HETSGD_CHECK(labels == c.num_labels && features == c.num_features,
               "the " << what << "'s shape " << features << " x " << labels
                      << " differs from the model's " << c.num_features << " x " << c.num_labels);
}

}  // namespace

Ranker::Ranker(Device& network, std::shared_ptr<const LabelForest> forest, double w,
               std::shared_ptr<const LinearExpert> linear, double u)
    : network_(&network), forest_(std::move(forest)), linear_(std::move(linear)) {
  if (forest_ != nullptr) {
    check_expert(network.config(), "label forest", forest_->empty(), forest_->num_features(),
                 forest_->num_labels());
  }
  if (linear_ != nullptr) {
    check_expert(network.config(), "set of linear classifiers", linear_->empty(),
                 linear_->num_features(), linear_->num_labels());
  }
  if (linear_ != nullptr) linear_floor_ = linear_->log_sigmoid_biases();
  set_forest_weight(w);
  set_linear_weight(u);
}

void Ranker::set_forest_weight(double w) {
  HETSGD_CHECK(w >= 0.0 && w <= kMaxForestWeight,
               "forest weight " << w << " outside [0, " << kMaxForestWeight << "]");
  weight_ = forest_ != nullptr ? w : 0.0;
}

void Ranker::set_linear_weight(double u) {
  HETSGD_CHECK(u >= 0.0 && u <= kMaxLinearWeight,
               "linear weight " << u << " outside [0, " << kMaxLinearWeight << "]");
  linear_weight_ = linear_ != nullptr ? u : 0.0;
}

float Ranker::log_experts(const CsrBatch& rows, ExpertScores* out, bool reuse) {
  const index_t L = network_->config().num_labels;
  if (!reuse || out->rows != rows.rows()) {
    resize_resident(&out->logits, static_cast<size_t>(rows.rows() * L));
    out->loss = network_->score_all(rows, out->logits.data());
    out->rows = rows.rows();
    out->forest_of = nullptr;
    out->linear_of = nullptr;
    out->has_forest = out->has_linear = false;
  }
  if (!out->has_linear || out->linear_of != linear_.get()) {
    out->linear_of = linear_.get();
    out->has_linear = linear_ != nullptr;
    if (linear_ != nullptr) {
      linear_->log_sigmoid_scores(rows, &out->log_linear);
      out->linear_floor = linear_floor_;
    }
  }
  if (!out->has_forest || out->forest_of != forest_.get()) {
    out->forest_of = forest_.get();
    out->has_forest = forest_ != nullptr;
    if (forest_ != nullptr) {
      forest_->scores(rows, &out->log_forest);
      tbb::parallel_for(tbb::blocked_range<size_t>(0, out->log_forest.size(), 16),
                        [&](const tbb::blocked_range<size_t>& range) {
                          for (size_t r = range.begin(); r != range.end(); ++r) {
                            for (LabelScore& e : out->log_forest[r])
                              e.score = std::log(e.score + kForestFloor);
                          }
                        });
    }
  }
  return out->loss;
}

RowBlend::RowBlend(const ExpertScores& scores, index_t num_labels)
    : s_(scores),
      L_(num_labels),
      forest_(static_cast<size_t>(num_labels), std::log(kForestFloor)),
      linear_(scores.has_linear ? scores.linear_floor
                                : std::vector<float>(static_cast<size_t>(num_labels), 0.0f)) {}

void RowBlend::row(index_t r, float w, float u, const float* prior, float g, float* v) {
  const auto i = static_cast<size_t>(r);
  if (s_.has_forest)
    for (const LabelScore& e : s_.log_forest[i]) forest_[static_cast<size_t>(e.label)] = e.score;
  if (s_.has_linear)
    for (const LabelScore& e : s_.log_linear[i]) linear_[static_cast<size_t>(e.label)] = e.score;
  // An expert the scores lack weighs 0: its term, finite, then adds exactly nothing.
  const float wf = s_.has_forest ? w : 0.0f;
  const float uf = s_.has_linear ? u : 0.0f;
  const float* s = s_.logits.data() + r * L_;
  const float* f = forest_.data();
  const float* z = linear_.data();
  if (g != 0.0f) {
    for (index_t l = 0; l < L_; ++l)
      v[l] = (1.0f - uf) * ((1.0f - wf) * (s[l] + g * prior[l]) + wf * f[l]) + uf * z[l];
  } else {
    for (index_t l = 0; l < L_; ++l)
      v[l] = (1.0f - uf) * ((1.0f - wf) * s[l] + wf * f[l]) + uf * z[l];
  }
  if (s_.has_forest) {
    const float floor_log = std::log(kForestFloor);
    for (const LabelScore& e : s_.log_forest[i]) forest_[static_cast<size_t>(e.label)] = floor_log;
  }
  if (s_.has_linear) {
    for (const LabelScore& e : s_.log_linear[i]) {
      const auto l = static_cast<size_t>(e.label);
      linear_[l] = s_.linear_floor[l];
    }
  }
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

void Ranker::blend_topk(const ExpertScores& s, index_t L, double w, double u, int k, col_t* labels,
                        float* scores) {
  const index_t rows = static_cast<index_t>(s.logits.size()) / std::max<index_t>(L, 1);
  const auto wf = static_cast<float>(w);
  const auto uf = static_cast<float>(u);
  const bool blends = s.has_forest || s.has_linear;
  const auto blended = [&](const tbb::blocked_range<index_t>& range) {
    std::vector<float> out(blends ? static_cast<size_t>(L) : 0);
    RowBlend blend(s, blends ? L : 0);
    for (index_t r = range.begin(); r != range.end(); ++r) {
      const float* v = s.logits.data() + r * L;
      if (blends) {
        blend.row(r, wf, uf, nullptr, 0.0f, out.data());
        v = out.data();
      }
      col_t* lab = labels + r * k;
      top_labels(v, L, k, lab);
      if (scores == nullptr) continue;
      // The normaliser, shifted by the row's largest score (its first label) for stability.
      const float top = lab[0] >= 0 ? v[lab[0]] : 0.0f;
      double z = 0.0;
      for (index_t l = 0; l < L; ++l) z += static_cast<double>(std::exp(v[l] - top));
      for (int j = 0; j < k; ++j) {
        scores[r * k + j] =
            lab[j] >= 0 ? static_cast<float>(static_cast<double>(std::exp(v[lab[j]] - top)) / z)
                        : 0.0f;
      }
    }
  };
  tbb::parallel_for(tbb::blocked_range<index_t>(0, rows, 8), blended);
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

float Ranker::rank(const CsrBatch& batch, int k, col_t* labels) {
  if (!network_only()) return blended_topk(batch, k, labels, nullptr);
  topk_scores_.resize(static_cast<size_t>(batch.rows() * k));
  return network_->predict_topk(batch, k, labels, topk_scores_.data());
}

float Ranker::blended_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  const index_t L = network_->config().num_labels;
  const index_t block = std::max<index_t>(1, kBlendBlock / L);
  double loss = 0.0;
  for (index_t b = 0; b < batch.rows(); b += block) {
    const index_t e = std::min(batch.rows(), b + block);
    slice_rows(batch, b, e, &sub_);
    loss += static_cast<double>(log_experts(sub_, &experts_)) * static_cast<double>(e - b);
    blend_topk(experts_, L, weight_, linear_weight_, k, labels + b * k,
               scores != nullptr ? scores + b * k : nullptr);
  }
  return batch.rows() > 0 ? static_cast<float>(loss / static_cast<double>(batch.rows())) : 0.0f;
}

LoadedRanker load_ranker(const SavedModel& model, const RankerDevice& make) {
  LoadedRanker out;
  out.device = make(model.config);
  out.device->write_params(model.params.data());
  out.ranker = std::make_unique<Ranker>(*out.device, model.forest, model.forest_weight,
                                        model.linear, model.linear_weight);
  return out;
}

}  // namespace hetsgd
