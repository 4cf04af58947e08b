#include "core/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hetsgd {

void accumulate_ranking(const CsrBatch& truth, const col_t* topk, int k, RankingMetrics* acc) {
  // 1/log2(r+2) for r = 0..4, and its prefix sums for the ideal DCG.
  static const double kDiscount[5] = {1.0, 0.6309297535714575, 0.5, 0.43067655807339306,
                                      0.38685280723454163};
  for (index_t row = 0; row < truth.rows(); ++row) {
    const col_t* yb = truth.y_indices.data() + truth.y_indptr[row];
    const col_t* ye = truth.y_indices.data() + truth.y_indptr[row + 1];
    const index_t ny = ye - yb;
    // Label sets are small (tens); a linear scan beats building a set per row.
    double hits = 0.0, dcg = 0.0, idcg = 0.0;
    for (int r = 0; r < 5; ++r) {
      if (r < k && ny > 0) {
        const col_t l = topk[row * k + r];
        if (std::find(yb, ye, l) != ye) {
          hits += 1.0;
          dcg += kDiscount[r];
        }
      }
      if (r < ny) idcg += kDiscount[r];
      acc->precision[r] += hits / (r + 1);
      if (idcg > 0) acc->ndcg[r] += dcg / idcg;
    }
  }
  acc->rows += truth.rows();
}

void finish_ranking(RankingMetrics* acc) {
  if (acc->rows == 0) return;
  for (int r = 0; r < 5; ++r) {
    acc->precision[r] /= static_cast<double>(acc->rows);
    acc->ndcg[r] /= static_cast<double>(acc->rows);
  }
}

std::string format_ranking(const RankingMetrics& m) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "P@1=%.4f P@3=%.4f P@5=%.4f nDCG@3=%.4f nDCG@5=%.4f", m.p_at(1),
                m.p_at(3), m.p_at(5), m.ndcg_at(3), m.ndcg_at(5));
  return buf;
}

}  // namespace hetsgd
