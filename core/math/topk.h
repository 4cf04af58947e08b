/// \file core/math/topk.h
/// Top-k selection by insertion into a small array kept sorted best first.
///
/// Order: a higher score is better; equal scores rank the smaller label id first, so the
/// result is a deterministic function of the scores whatever order they are offered in (the
/// CPU backend scans labels in order, a CUDA warp may merge partial lists). NaN scores are
/// never inserted. Cost is O(k) per accepted candidate and O(1) per rejected one, which is the
/// common case once the list is full, so a row of L scores costs O(L + accepted * k).
/// Usable from host and device code; k is small (typically <= 10).
#pragma once

#include <math.h>

#include "core/hd.h"
#include "core/types.h"

namespace hetsgd::math {

/// True when (score a, id ia) ranks before (score b, id ib).
HETSGD_HD inline bool topk_better(float a, col_t ia, float b, col_t ib) {
  return a > b || (a == b && ia < ib);
}

/// Offers candidate (`score`, `id`) to the list `scores[0..size)`, `ids[0..size)` that is
/// sorted best first and holds at most `k` entries. Inserts it in place (shifting worse
/// entries down, dropping the last when the list is full) and updates `size`.
/// Returns true when the candidate was kept.
HETSGD_HD inline bool topk_insert(float* scores, col_t* ids, int k, int& size, float score,
                                  col_t id) {
  if (k <= 0 || score != score) return false;  // k == 0 or NaN
  if (size == k && !topk_better(score, id, scores[k - 1], ids[k - 1])) return false;
  int pos = size < k ? size : k - 1;  // slot freed at the end
  while (pos > 0 && topk_better(score, id, scores[pos - 1], ids[pos - 1])) {
    scores[pos] = scores[pos - 1];
    ids[pos] = ids[pos - 1];
    --pos;
  }
  scores[pos] = score;
  ids[pos] = id;
  if (size < k) ++size;
  return true;
}

/// Top-`k` of `z[0..n)` into `scores[0..k)` / `ids[0..k)`, best first. When n < k the tail is
/// padded with id -1 and score -INFINITY (metrics count id -1 as a miss).
HETSGD_HD inline void topk_row(const float* z, index_t n, int k, float* scores, col_t* ids) {
  int size = 0;
  for (index_t j = 0; j < n; ++j) {
    topk_insert(scores, ids, k, size, z[j], static_cast<col_t>(j));
  }
  for (int r = size; r < k; ++r) {
    scores[r] = -INFINITY;
    ids[r] = -1;
  }
}

}  // namespace hetsgd::math
