/// \file core/label_prior.h
/// Tail-label re-ranking by a propensity prior on the output scores (apps/DEFAULTS.md).
///
/// A model's score for label l becomes s_l + g ln(1/p_l), with p_l the label's propensity
/// (core/metrics.h: rare labels have small p_l). For a softmax model this multiplies each
/// label's probability by p_l^-g before normalising, the logit adjustment of long-tail
/// learning; for a one-vs-all (bce) model it shifts each label's logit. Either way it is one
/// constant per label, so it is folded into the output layer's bias: the saved model, `eval`
/// and `predict` then rank with it and need nothing else. g = 0 leaves the model as it is;
/// larger g trades precision on head labels for propensity-scored precision (PSP@k).
#pragma once

#include <vector>

#include "core/param_layout.h"

namespace hetsgd {

/// Largest accepted tail weight g: at g = 10 a label of propensity 0.1 gains 23 logits,
/// far past any useful trade.
inline constexpr double kMaxTailWeight = 10.0;

/// Adds g ln(inv_propensity[l]) to the output bias of `params` (laid out by `layout`) for
/// every label l. `inv_propensity` holds 1/p_l >= 1 for each label (inverse_propensities()).
/// Throws InvalidArgument when g is outside [0, kMaxTailWeight], the sizes disagree or an
/// inverse propensity is below 1.
void add_label_prior(const ParamLayout& layout, const std::vector<float>& inv_propensity, double g,
                     std::vector<float>* params);

}  // namespace hetsgd
