/// \file core/model/ranker.h
/// Ranker: how a saved model ranks labels. The network (a Device holding the parameters) and,
/// optionally, a label forest (core/forest/) and one-vs-rest linear classifiers (core/linear/)
/// blended in as a product of experts:
///   [p_l^(1-w) (f_l + kForestFloor)^w]^(1-u) sigmoid(z_l)^u
/// normalised over the labels, p the network's softmax probabilities, f the forest's
/// normalised scores (core/forest/README.md) and z the linear classifiers' scores. A propensity
/// prior chosen at training time is already in the parameters (core/label_prior.h): it needs
/// no expert here. eval, predict, the Python package and training's calibration all rank
/// through this one class.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/forest/label_forest.h"
#include "core/linear/linear_expert.h"
#include "core/model/model_io.h"

namespace hetsgd {

/// Scores held at once: rows are blended in blocks of at most this many scores.
inline constexpr index_t kBlendBlock = index_t{1} << 22;

/// What the forest's score of every label is raised by before the product: a label no leaf
/// holds is not ruled out, only outweighed (chosen on validation, core/forest/README.md).
inline constexpr float kForestFloor = 3e-3f;

/// Largest forest weight: at 1 the network no longer counts.
inline constexpr double kMaxForestWeight = 1.0;
/// Largest linear weight: at 1 the network and the forest no longer count.
inline constexpr double kMaxLinearWeight = 1.0;

class Ranker {
 public:
  /// Ranks with `network` alone (no forest).
  explicit Ranker(Device& network);
  /// Blends `forest` in at weight `w` in [0, kMaxForestWeight]. Throws InvalidArgument when
  /// the forest's shape differs from the network's or the loss is not softmax.
  Ranker(Device& network, std::shared_ptr<const LabelForest> forest, double w);
  /// Blends `forest` at weight `w` (may be null) and `linear` at weight `u` in
  /// [0, kMaxLinearWeight]; throws as the forest's constructor does, and when the linear
  /// classifiers' shape differs from the network's.
  Ranker(Device& network, std::shared_ptr<const LabelForest> forest, double w,
         std::shared_ptr<const LinearExpert> linear, double u);

  Device& network() { return *network_; }
  const LabelForest* forest() const { return forest_.get(); }
  double forest_weight() const { return weight_; }
  void set_forest_weight(double w);
  const LinearExpert* linear() const { return linear_.get(); }
  double linear_weight() const { return linear_weight_; }
  void set_linear_weight(double u);
  /// True when the network's own scores rank (no expert at a weight above 0): its top-k, its
  /// label search (approximate indexes) and its scores' link (softmax, sigmoid) apply as they
  /// are.
  bool network_only() const {
    return (forest_ == nullptr || weight_ == 0.0) && (linear_ == nullptr || linear_weight_ == 0.0);
  }

  /// The top `k` labels of each row, best first (rows*k arrays, like Device::predict_topk).
  /// Scores: the network's with network_only(), else the blend's probabilities. Returns the
  /// network's mean loss.
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores);
  /// predict_topk() with probabilities for scores: the blend's, else the network's softmax
  /// over every label (each row scored in full) or, for a one-vs-all loss, each label's own
  /// sigmoid.
  float predict_probabilities(const CsrBatch& batch, int k, col_t* labels, float* scores);
  /// predict_topk()'s labels without their scores (evaluation reads ranks only: a blend then
  /// skips its normaliser). Returns the network's mean loss.
  float rank(const CsrBatch& batch, int k, col_t* labels);

  /// The blend's two experts for `rows`, rows x L each, by label id, in log space: the
  /// network's logits in `logits` (its log-probabilities up to each row's normaliser, which no
  /// ranking reads) and ln(f_l + kForestFloor) of the forest's normalised scores in
  /// `log_forest` (left empty without a forest). The network scores each label once
  /// (Device::score_all). `log_linear` (may be null) gets ln sigmoid(z_l) of the linear
  /// classifiers (left empty without them). Returns its mean loss.
  float log_experts(const CsrBatch& rows, std::vector<float>* logits,
                    std::vector<float>* log_forest, std::vector<float>* log_linear = nullptr);

  /// The `k` labels of the highest of `L` scores, best first, ties to the lower label; -1
  /// past L.
  static void top_labels(const float* scores, index_t L, int k, col_t* labels);
  /// For each of `rows` rows of L scores (row-major, log_experts()'s), the top-k of
  /// v_l = (1 - u) ((1 - w) logit_l + w log_forest_l) + u log_linear_l, the logarithm of the
  /// blend up to the row's normaliser; a null expert's term is left out (`log_forest` null:
  /// the bracket is the logit). Best first, ties to the lower label. `scores` (null: not
  /// wanted) gets exp(v_l) normalised over the row's labels, the blend's probabilities. Rows
  /// are blended in parallel.
  static void blend_topk(const float* logits, const float* log_forest, index_t rows, index_t L,
                         double w, int k, col_t* labels, float* scores,
                         const float* log_linear = nullptr, double u = 0.0);

 private:
  /// Every label scored (at weight 0 or without a forest: the softmax alone), in blocks of
  /// kBlendBlock scores; `scores` null: ranks only.
  float blended_topk(const CsrBatch& batch, int k, col_t* labels, float* scores);

  Device* network_;
  std::shared_ptr<const LabelForest> forest_;
  double weight_ = 0.0;
  std::shared_ptr<const LinearExpert> linear_;
  double linear_weight_ = 0.0;
  CsrBatch sub_;
  std::vector<float> logits_, log_forest_, log_linear_, topk_scores_;
};

/// Makes a device for a model's config (kernels' make_device with the caller's options).
using RankerDevice = std::function<std::unique_ptr<Device>(const ModelConfig&)>;

/// A saved model on a device, ready to rank.
struct LoadedRanker {
  std::unique_ptr<Device> device;
  std::unique_ptr<Ranker> ranker;
};

/// Puts `model` (load_model()'s) on a device from `make`, its parameters written, behind the
/// Ranker its file describes: the one way eval, predict and the Python package rank.
LoadedRanker load_ranker(const SavedModel& model, const RankerDevice& make);

}  // namespace hetsgd
