#include "core/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>

#include "core/error.h"

namespace hetsgd {

PropensityModel propensity_model_for(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("amazon") != std::string::npos || lower.find("amz") != std::string::npos) {
    return {0.6, 2.6};
  }
  if (lower.find("wiki") != std::string::npos) return {0.5, 0.4};
  return {};
}

std::vector<float> inverse_propensities(const Dataset& train, const PropensityModel& model) {
  HETSGD_CHECK(std::isfinite(model.a) && model.a > 0,
               "inverse_propensities: A " << model.a << " is not > 0");
  HETSGD_CHECK(std::isfinite(model.b) && model.b > 0,
               "inverse_propensities: B " << model.b << " is not > 0");
  if (train.rows() < 2) return {};
  std::vector<double> counts(static_cast<size_t>(train.num_labels), 0.0);
  for (col_t l : train.y_indices) {
    if (l >= 0 && static_cast<index_t>(l) < train.num_labels) counts[l] += 1.0;
  }
  const double n = static_cast<double>(train.rows());
  const double c = (std::log(n) - 1.0) * std::pow(model.b + 1.0, model.a);
  std::vector<float> inv(counts.size());
  for (size_t l = 0; l < counts.size(); ++l) {
    inv[l] = static_cast<float>(1.0 + c * std::pow(counts[l] + model.b, -model.a));
  }
  return inv;
}

namespace {

// 1/log2(r+2) for r = 0..4.
constexpr double kDiscount[5] = {1.0, 0.6309297535714575, 0.5, 0.43067655807339306,
                                 0.38685280723454163};

// Adds one row's weighted precision and nDCG sums (weights w[r] at rank r, zero for a miss)
// to p[] and n[]; `ideal[r]` is IDCG@(r+1) of the row (0 when it has no label).
void add_weighted(const double* w, const double* ideal, std::array<double, 5>* p,
                  std::array<double, 5>* n) {
  double sum = 0.0, dcg = 0.0, disc = 0.0;
  for (int r = 0; r < 5; ++r) {
    sum += w[r];
    dcg += w[r] * kDiscount[r];
    disc += kDiscount[r];
    (*p)[r] += sum / (r + 1);
    // pyxclib divides by min(IDCG over |y|, DCG of k hits); a row without labels has zero
    // weights, so its term is zero either way.
    if (ideal[r] > 0) (*n)[r] += dcg / std::min(ideal[r], disc);
  }
}

}  // namespace

void accumulate_ranking(const CsrBatch& truth, const col_t* topk, int k, RankingMetrics* acc,
                        const std::vector<float>* inv_propensity) {
  const bool ps = inv_propensity != nullptr && !inv_propensity->empty();
  if (ps) {
    HETSGD_CHECK(static_cast<index_t>(inv_propensity->size()) >= truth.num_labels,
                 "accumulate_ranking: " << inv_propensity->size() << " propensities for "
                                        << truth.num_labels << " labels");
    acc->has_propensity = 1;
  }
  std::vector<double> best;
  for (index_t row = 0; row < truth.rows(); ++row) {
    const col_t* yb = truth.y_indices.data() + truth.y_indptr[row];
    const col_t* ye = truth.y_indices.data() + truth.y_indptr[row + 1];
    const index_t ny = ye - yb;
    // Label sets are small (tens); a linear scan beats building a set per row.
    double hits = 0.0, dcg = 0.0, idcg = 0.0;
    double ideal[5], w[5] = {0, 0, 0, 0, 0};
    for (int r = 0; r < 5; ++r) {
      if (r < k && ny > 0) {
        const col_t l = topk[row * k + r];
        if (std::find(yb, ye, l) != ye) {
          hits += 1.0;
          dcg += kDiscount[r];
          if (ps) w[r] = (*inv_propensity)[l];
        }
      }
      if (r < ny) idcg += kDiscount[r];
      ideal[r] = idcg;
      acc->precision[r] += hits / (r + 1);
      if (idcg > 0) acc->ndcg[r] += dcg / idcg;
      if (ny > 0) acc->recall[r] += hits / static_cast<double>(ny);
    }
    if (!ps) continue;
    add_weighted(w, ideal, &acc->psp, &acc->psndcg);
    // The best a ranking can do for this row: its true labels by weight, largest first.
    best.clear();
    for (const col_t* y = yb; y != ye; ++y) best.push_back((*inv_propensity)[*y]);
    const size_t top = std::min<size_t>(5, best.size());
    std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(top), best.end(),
                      std::greater<double>());
    double bw[5] = {0, 0, 0, 0, 0};
    for (size_t r = 0; r < top; ++r) bw[r] = best[r];
    add_weighted(bw, ideal, &acc->psp_best, &acc->psndcg_best);
  }
  acc->rows += truth.rows();
}

void finish_ranking(RankingMetrics* acc) {
  if (acc->rows == 0) return;
  const double rows = static_cast<double>(acc->rows);
  for (int r = 0; r < 5; ++r) {
    acc->precision[r] /= rows;
    acc->ndcg[r] /= rows;
    acc->recall[r] /= rows;
    acc->psp_best[r] /= rows;
    acc->psndcg_best[r] /= rows;
    // A ratio of means over rows, as pyxclib's psprecision / psndcg.
    acc->psp[r] = acc->psp_best[r] > 0 ? acc->psp[r] / rows / acc->psp_best[r] : 0.0;
    acc->psndcg[r] = acc->psndcg_best[r] > 0 ? acc->psndcg[r] / rows / acc->psndcg_best[r] : 0.0;
  }
}

void accumulate_topk_recall(const col_t* exact, const col_t* approx, index_t rows, int k,
                            TopkRecall* acc) {
  for (index_t r = 0; r < rows; ++r) {
    const col_t* e = exact + r * k;
    const col_t* a = approx + r * k;
    int wanted = 0;
    int hits = 0;
    for (int j = 0; j < std::min(k, 5); ++j) {
      if (e[j] >= 0) {
        ++wanted;
        hits += std::find(a, a + j + 1, e[j]) != a + j + 1;
      }
      // |a[0..j] ∩ e[0..j]|: e[j] against the approximate prefix, and a[j] against the exact
      // one when a[j] is not e[j] (each common label is counted once, at its later position).
      if (a[j] >= 0 && a[j] != e[j] && std::find(e, e + j, a[j]) != e + j) ++hits;
      acc->at[j] += wanted > 0 ? static_cast<double>(hits) / wanted : 1.0;
    }
  }
  acc->rows += rows;
}

void finish_topk_recall(TopkRecall* acc) {
  if (acc->rows == 0) return;
  for (double& v : acc->at) v /= static_cast<double>(acc->rows);
}

std::string format_ranking(const RankingMetrics& m) {
  char buf[256];
  int n =
      std::snprintf(buf, sizeof buf, "P@1=%.4f P@3=%.4f P@5=%.4f nDCG@3=%.4f nDCG@5=%.4f R@5=%.4f",
                    m.p_at(1), m.p_at(3), m.p_at(5), m.ndcg_at(3), m.ndcg_at(5), m.recall_at(5));
  if (m.has_propensity && n > 0 && n < static_cast<int>(sizeof buf)) {
    std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n),
                  " PSP@1=%.4f PSP@3=%.4f PSP@5=%.4f PSnDCG@5=%.4f", m.psp_at(1), m.psp_at(3),
                  m.psp_at(5), m.psndcg_at(5));
  }
  return buf;
}

}  // namespace hetsgd
