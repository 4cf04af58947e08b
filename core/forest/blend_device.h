/// \file core/forest/blend_device.h
/// ForestBlendDevice: a device whose top-k ranks the network's softmax probabilities blended
/// with a label forest's scores as a product of experts, p_l^(1-w) (f_l + kForestFloor)^w
/// normalised over the labels (core/forest/README.md).
#pragma once

#include <memory>

#include "core/forest/label_forest.h"
#include "core/forwarding_device.h"

namespace hetsgd {

/// Scores held at once: rows are blended in blocks of at most this many scores.
inline constexpr index_t kBlendBlock = index_t{1} << 22;

/// What the forest's score of every label is raised by before the product: a label no leaf
/// holds is not ruled out, only outweighed (chosen on validation, core/forest/README.md).
inline constexpr float kForestFloor = 3e-3f;

/// Largest forest weight: at 1 the network no longer counts.
inline constexpr double kMaxForestWeight = 1.0;

class ForestBlendDevice : public ForwardingDevice {
 public:
  /// Wraps `inner` (a softmax model of forest->num_labels() labels) with weight `w` in
  /// [0, kMaxForestWeight]. Throws InvalidArgument when the shapes, the loss or w do not fit.
  ForestBlendDevice(std::unique_ptr<Device> inner, std::shared_ptr<const LabelForest> forest,
                    double w);
  void set_weight(double w);
  /// Replaces the forest (same shape).
  void set_forest(std::shared_ptr<const LabelForest> forest);
  double weight() const { return weight_; }
  /// The blended top-k, best first; scores are the blend's probabilities (normalised over
  /// every label). At weight 0 the inner device's own top-k and scores. Returns the network's
  /// loss.
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override;
  /// The two experts' scores of `rows`, rows x num_labels each, by label id: the network's
  /// softmax probabilities in `probs`, the forest's normalised scores in `forest`. Returns the
  /// network's loss.
  float expert_scores(const CsrBatch& rows, std::vector<float>* probs, std::vector<float>* forest);
  /// The top-k of probs^(1-w) (forest + kForestFloor)^w for each of `rows` rows of L scores
  /// (row-major), best first, ties to the lower label; scores are that product normalised
  /// over the row's labels.
  static void blend_topk(const float* probs, const float* forest, index_t rows, index_t L, double w,
                         int k, col_t* labels, float* scores);

 private:
  std::shared_ptr<const LabelForest> forest_;
  double weight_ = 0.0;
  CsrBatch sub_;
  std::vector<col_t> all_labels_;
  std::vector<float> all_scores_, probs_, forest_scores_;
};

}  // namespace hetsgd
