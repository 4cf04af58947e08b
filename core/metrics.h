/// \file core/metrics.h
/// Ranking metrics of the Extreme Classification Repository: P@k and nDCG@k for k = 1, 3, 5.
///
/// Conventions (XC Repository): P@k = |top-k ∩ y| / k; nDCG@k = DCG@k / IDCG@k with
/// DCG@k = sum_{r<k} [label_r in y] / log2(r + 2) and IDCG@k over min(k, |y|) relevant labels.
/// Rows without labels count as zero for both and stay in the denominator.
#pragma once

#include <array>
#include <string>

#include "core/dataset.h"

namespace hetsgd {

/// Sums over rows; call finish() for means.
struct RankingMetrics {
  std::array<double, 5> precision{};  ///< precision[k-1] = P@k, k = 1..5
  std::array<double, 5> ndcg{};       ///< ndcg[k-1] = nDCG@k
  double loss = 0.0;                  ///< mean loss (filled by the caller)
  index_t rows = 0;

  double p_at(int k) const { return precision[k - 1]; }
  double ndcg_at(int k) const { return ndcg[k - 1]; }
};

/// Accumulates P@1..5 and nDCG@1..5 over `truth.rows()` rows whose predicted top-`k` labels
/// (best first, k >= 5 needed for @5; shorter lists count as misses) are `topk[row*k + r]`.
/// Adds row sums to `acc`.
void accumulate_ranking(const CsrBatch& truth, const col_t* topk, int k, RankingMetrics* acc);

/// Turns the sums of accumulate_ranking into means over acc->rows.
void finish_ranking(RankingMetrics* acc);

/// "P@1=0.6312 P@3=... nDCG@5=..." for logs.
std::string format_ranking(const RankingMetrics& m);

}  // namespace hetsgd
