#include "core/model/ranker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/error.h"

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

float Ranker::log_experts(const CsrBatch& rows, std::vector<float>* logits,
                          std::vector<float>* log_forest, std::vector<float>* log_linear) {
  const index_t L = network_->config().num_labels;
  const auto n = static_cast<size_t>(rows.rows() * L);
  logits->resize(n);
  const float loss = network_->score_all(rows, logits->data());
  if (log_linear != nullptr) {
    log_linear->clear();
    if (linear_ != nullptr) {
      log_linear->resize(n);
      linear_->log_sigmoid_scores(rows, log_linear->data());
    }
  }
  log_forest->clear();
  if (forest_ == nullptr) return loss;
  log_forest->assign(n, 0.0f);
  forest_->add_scores(rows, 1.0f, log_forest->data());
  // Most labels are in none of a row's leaves: their term is the floor's, without a log each.
  const float floor_log = std::log(kForestFloor);
  float* f = log_forest->data();
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, size_t{1} << 16),
                    [&](const tbb::blocked_range<size_t>& range) {
                      for (size_t i = range.begin(); i != range.end(); ++i) {
                        f[i] = f[i] == 0.0f ? floor_log : std::log(f[i] + kForestFloor);
                      }
                    });
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

void Ranker::blend_topk(const float* logits, const float* log_forest, index_t rows, index_t L,
                        double w, int k, col_t* labels, float* scores, const float* log_linear,
                        double u) {
  const auto wf = static_cast<float>(w);
  const auto uf = static_cast<float>(u);
  const bool blends = log_forest != nullptr || log_linear != nullptr;
  const auto blended = [&](const tbb::blocked_range<index_t>& range) {
    std::vector<float> out(blends ? static_cast<size_t>(L) : 0);
    for (index_t r = range.begin(); r != range.end(); ++r) {
      const float* v = logits + r * L;
      if (blends) {
        const float* g = log_forest != nullptr ? log_forest + r * L : nullptr;
        const float* z = log_linear != nullptr ? log_linear + r * L : nullptr;
        for (index_t l = 0; l < L; ++l) {
          const float inner = g != nullptr ? (1.0f - wf) * v[l] + wf * g[l] : v[l];
          out[static_cast<size_t>(l)] = z != nullptr ? (1.0f - uf) * inner + uf * z[l] : inner;
        }
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
    loss += static_cast<double>(log_experts(sub_, &logits_, &log_forest_, &log_linear_)) *
            static_cast<double>(e - b);
    blend_topk(logits_.data(), log_forest_.empty() ? nullptr : log_forest_.data(), e - b, L,
               weight_, k, labels + b * k, scores != nullptr ? scores + b * k : nullptr,
               log_linear_.empty() ? nullptr : log_linear_.data(), linear_weight_);
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
