/// \file core/metrics.h
/// Ranking metrics of the Extreme Classification Repository: P@k, nDCG@k, recall@k and the
/// propensity-scored PSP@k and PSnDCG@k for k = 1..5.
///
/// Conventions (XC Repository, pyxclib's xc_metrics): P@k = |top-k ∩ y| / k; nDCG@k =
/// DCG@k / IDCG@k with DCG@k = sum_{r<k} [label_r in y] / log2(r + 2) and IDCG@k over
/// min(k, |y|) relevant labels; recall@k = |top-k ∩ y| / |y|. Rows without labels count as zero
/// and stay in the denominator.
///
/// Propensity-scored metrics (Jain, Prabhu, Varma, KDD 2016) weight a hit on label l by its
/// inverse propensity 1/p_l = 1 + C (N_l + B)^-A, C = (ln N - 1)(B + 1)^A, where N is the number
/// of training rows and N_l label l's count among them. PSP@k is the mean over rows of the
/// weighted precision divided by the mean over rows of the best weighted precision the row's
/// true labels allow (their k largest weights): a ratio of means, as pyxclib's psprecision
/// computes it, so 1.0 is the best any ranking can do. PSnDCG@k is the same ratio for the
/// weighted DCG normalised by IDCG@k.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dataset.h"

namespace hetsgd {

/// A and B of the propensity model. Defaults of the XC Repository: 0.55 / 1.5; Amazon sets
/// 0.6 / 2.6; Wikipedia sets 0.5 / 0.4.
struct PropensityModel {
  double a = 0.55;
  double b = 1.5;
};

/// The repository's A/B for a data set named `name` (a preset such as "amazon-670k" or a file
/// name): Amazon for names containing "amazon" or "amz", Wikipedia for "wiki", else the
/// default.
PropensityModel propensity_model_for(const std::string& name);

/// Inverse propensities 1/p_l for l < train.num_labels from `train`'s label counts (a label
/// that never occurs in `train` gets N_l = 0). Empty when `train` has fewer than 2 rows.
std::vector<float> inverse_propensities(const Dataset& train, const PropensityModel& model);

/// Sums over rows; call finish_ranking() for means.
struct RankingMetrics {
  std::array<double, 5> precision{};    ///< precision[k-1] = P@k, k = 1..5
  std::array<double, 5> ndcg{};         ///< ndcg[k-1] = nDCG@k
  std::array<double, 5> recall{};       ///< recall[k-1] = recall@k
  std::array<double, 5> psp{};          ///< psp[k-1] = PSP@k (when has_propensity)
  std::array<double, 5> psndcg{};       ///< psndcg[k-1] = PSnDCG@k (when has_propensity)
  std::array<double, 5> psp_best{};     ///< mean best weighted precision (the PSP@k divisor)
  std::array<double, 5> psndcg_best{};  ///< mean best weighted nDCG (the PSnDCG@k divisor)
  double loss = 0.0;                    ///< mean loss (filled by the caller)
  index_t rows = 0;
  /// 1 when psp / psndcg were computed (64 bits: checkpoints write the struct's bytes, so it
  /// must have no padding).
  std::int64_t has_propensity = 0;

  double p_at(int k) const { return precision[k - 1]; }
  double ndcg_at(int k) const { return ndcg[k - 1]; }
  double recall_at(int k) const { return recall[k - 1]; }
  double psp_at(int k) const { return psp[k - 1]; }
  double psndcg_at(int k) const { return psndcg[k - 1]; }
  /// P@1 + P@3 + P@5: the one criterion every choice made on validation maximises (keep-best,
  /// patience, the calibration's grids), so that the selected epoch and the blend weights
  /// answer the same question. P@1 alone stops rewarding training once the top label is
  /// right while P@3 and P@5 still climb (debian-tags: validation P@1 peaks at 9 of 25 epochs,
  /// the sum at 22).
  double p135() const { return p_at(1) + p_at(3) + p_at(5); }
};

// Checkpoints write RankingMetrics as bytes: no padding that would hold garbage.
static_assert(sizeof(RankingMetrics) == sizeof(double) * (7 * 5 + 1) + 2 * sizeof(std::int64_t),
              "RankingMetrics must have no padding");

/// How well an approximate top-k (a label index's search, rescored) agrees with the exact one:
/// at[j-1] = mean over rows of |approx top-j ∩ exact top-j| / |exact top-j| for j = 1..5
/// (exact entries with id -1, rows with fewer labels than j, are not wanted).
struct TopkRecall {
  std::array<double, 5> at{};
  index_t rows = 0;  ///< rows scored both ways (0: none)
  double at_k(int k) const { return at[k - 1]; }
};

/// Adds `rows` rows of top-`k` lists (best first, `exact[row*k + r]`, `approx[row*k + r]`,
/// k >= 5 needed for @5) to `acc`'s sums; finish_topk_recall() turns them into means.
void accumulate_topk_recall(const col_t* exact, const col_t* approx, index_t rows, int k,
                            TopkRecall* acc);
void finish_topk_recall(TopkRecall* acc);

/// Accumulates the metrics over `truth.rows()` rows whose predicted top-`k` labels (best
/// first, k >= 5 needed for @5; shorter lists count as misses) are `topk[row*k + r]`. With
/// `inv_propensity` (indexed by label, at least truth.num_labels long) the propensity-scored
/// sums are accumulated too. Adds row sums to `acc`.
void accumulate_ranking(const CsrBatch& truth, const col_t* topk, int k, RankingMetrics* acc,
                        const std::vector<float>* inv_propensity = nullptr);

/// Turns the sums of accumulate_ranking into means over acc->rows (and PSP / PSnDCG into their
/// ratios). Call once.
void finish_ranking(RankingMetrics* acc);

/// "P@1=0.6312 P@3=... nDCG@5=... [PSP@1=...]" for logs.
std::string format_ranking(const RankingMetrics& m);

}  // namespace hetsgd
