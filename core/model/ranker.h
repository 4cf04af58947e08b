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
#include "core/label_scores.h"
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

/// The experts' terms of a block of rows, in log space, as Ranker::log_experts() leaves them:
/// the network's logits in full (its log-probabilities up to each row's normaliser, which no
/// ranking reads), the others on the labels they reach in the row.
struct ExpertScores {
  std::vector<float> logits;  ///< rows x L
  index_t rows = 0;           ///< the rows the logits are of
  float loss = 0.0f;          ///< the network's mean loss over them
  // Whose terms these are (log_experts()'s `reuse`): null where none.
  const LabelForest* forest_of = nullptr;
  const LinearExpert* linear_of = nullptr;
  bool has_forest = false;
  /// ln(f_l + kForestFloor) of the labels a row's leaves name; every other label's term is
  /// ln kForestFloor.
  LabelScoreRows log_forest;
  bool has_linear = false;
  LabelScoreRows log_linear;        ///< ln sigmoid(z_l) of the labels a row's features reach
  std::vector<float> linear_floor;  ///< ln sigmoid(b_l): every other label's term (L)
};

/// Every label's blend of a row of ExpertScores, in log space:
///   v_l = (1 - u) ((1 - w) (s_l + g prior_l) + w F_l) + u Z_l,
/// s the logit, F the forest's term and Z the linear one (an expert the scores lack is left
/// out), prior_l weighted by g as add_label_prior() adds it to the output biases. It holds a
/// row's forest and linear terms for every label, so that a row is one pass over its labels
/// and its reached labels are written and cleared once. One per thread.
class RowBlend {
 public:
  /// `scores` must outlive this object.
  RowBlend(const ExpertScores& scores, index_t num_labels);
  /// v (num_labels values) for row `r`. `prior` may be null when g is 0.
  void row(index_t r, float w, float u, const float* prior, float g, float* v);

 private:
  const ExpertScores& s_;
  index_t L_;
  std::vector<float> forest_, linear_;  // every label's terms for the row at hand
};

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

  /// The experts' terms for `rows` (ExpertScores): the network scores each label once
  /// (Device::score_all), the forest and the linear classifiers, where the ranker has them,
  /// the labels they reach. Returns the network's mean loss. With `reuse`, `scores` already
  /// holds these rows' terms of this network (unchanged since): only the experts it lacks or
  /// holds another's terms of are scored, so that grids over one set of rows score the
  /// network once.
  float log_experts(const CsrBatch& rows, ExpertScores* scores, bool reuse = false);

  /// The `k` labels of the highest of `L` scores, best first, ties to the lower label; -1
  /// past L.
  static void top_labels(const float* scores, index_t L, int k, col_t* labels);
  /// For each row of `s`, the top-k of RowBlend's v_l (no prior), the logarithm of the blend
  /// up to the row's normaliser. Best first, ties to the lower label. `scores` (null: not
  /// wanted) gets exp(v_l) normalised over the row's labels, the blend's probabilities. Rows
  /// are blended in parallel.
  static void blend_topk(const ExpertScores& s, index_t L, double w, double u, int k, col_t* labels,
                         float* scores);

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
  std::vector<float> linear_floor_;  // ln sigmoid of the linear classifiers' biases
  ExpertScores experts_;
  std::vector<float> topk_scores_;
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
