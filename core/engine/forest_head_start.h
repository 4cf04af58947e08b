/// \file core/engine/forest_head_start.h
/// ForestHeadStart: the first trees of the forest calibrate() grows, grown while the network
/// trains, on a thread of its own at the lowest CPU priority (core/engine/README.md,
/// "The forest's head start").
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "core/dataset.h"
#include "core/forest/label_forest.h"

namespace hetsgd {

class ForestHeadStart {
 public:
  /// Starts growing trees 0 .. limit - 1 of the forest LabelForest::grow() makes from `rows`
  /// and `options` (LabelForest::grow_ahead). `rows` must outlive this object.
  ForestHeadStart(const Dataset& rows, const ForestOptions& options, int limit);
  ~ForestHeadStart();
  ForestHeadStart(const ForestHeadStart&) = delete;
  ForestHeadStart& operator=(const ForestHeadStart&) = delete;

  /// Halts the growth (a tree in progress is dropped within one node) and returns the trees
  /// done, tree t at index t. The second call returns none.
  std::vector<LabelForest> finish();
  /// The rows the trees grow from: they serve only the forest of these rows.
  const Dataset& rows() const { return rows_; }

 private:
  const Dataset& rows_;
  std::atomic<bool> halt_{false};
  std::vector<LabelForest> trees_;
  std::thread thread_;
};

}  // namespace hetsgd
