/// \file core/label_scores.h
/// LabelScoreRows: the scores an expert gives the few labels it reaches in each row of a block
/// (the label forest through the row's leaves, the linear classifiers through the row's
/// features); every other label scores what that expert says it scores. A blend then costs a
/// row's reached labels, not every label once more per expert.
#pragma once

#include <vector>

#include "core/types.h"

namespace hetsgd {

/// One label's score.
struct LabelScore {
  col_t label = 0;
  float score = 0.0f;
};

/// Row r's reached labels, each once, in the order the expert reached them. Reusing one
/// object across blocks keeps its rows' storage.
using LabelScoreRows = std::vector<std::vector<LabelScore>>;

}  // namespace hetsgd
