#include "core/engine/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"

namespace hetsgd {

double scoring_flops_per_row(const ModelConfig& config) {
  const index_t h = config.hidden.empty() ? config.num_features : config.hidden.back();
  return 2.0 * static_cast<double>(config.num_labels) * static_cast<double>(h);
}

double training_flops_per_sample(const ModelConfig& config, const Dataset& train, index_t b0) {
  const std::vector<index_t> w = config.widths();  // {d, hidden..., L}
  const double rows = static_cast<double>(std::max<index_t>(train.rows(), 1));
  const double nnz = static_cast<double>(train.nnz()) / rows;
  double scored = static_cast<double>(config.num_labels);
  if (config.uses_shortlist()) {
    const ShortlistConfig& s = config.shortlist;
    const double labels = static_cast<double>(train.label_nnz()) / rows;
    scored = std::min(scored, static_cast<double>(b0) * (s.hard_negatives + labels) +
                                  static_cast<double>(s.sampled_negatives));
  }
  double forward = 2.0 * nnz * static_cast<double>(w[1]);
  for (size_t i = 1; i + 2 < w.size(); ++i)
    forward += 2.0 * static_cast<double>(w[i]) * static_cast<double>(w[i + 1]);
  forward += 2.0 * static_cast<double>(w[w.size() - 2]) * scored;
  return 3.0 * forward;
}

namespace {
index_t rows_within(double flops, index_t rows, const ModelConfig& config) {
  const double per_row = std::max(1.0, scoring_flops_per_row(config));
  const double fit = std::floor(flops / per_row);
  return fit >= static_cast<double>(rows) ? rows : static_cast<index_t>(fit);
}
}  // namespace

index_t in_training_eval_rows(const TrainOptions& options, index_t rows,
                              const ModelConfig& config) {
  if (options.eval_max_points > 0) return std::min(options.eval_max_points, rows);
  if (options.eval_max_points == 0) return rows;
  return std::min(rows, std::max(kMinEvalRows, rows_within(kEvalFlops, rows, config)));
}

index_t in_training_test_rows(const TrainOptions& options, index_t rows, index_t val_rows,
                              const ModelConfig& config) {
  const index_t budget = in_training_eval_rows(options, rows, config);
  if (options.eval_max_points >= 0 || val_rows <= 0) return budget;
  return std::min(budget, std::max(kMinEvalRows, val_rows));
}

index_t final_eval_rows(const TrainOptions& options, index_t rows, const ModelConfig& config,
                        index_t val_rows) {
  if (options.exact_eval) return rows;
  const index_t sample = in_training_test_rows(options, rows, val_rows, config);
  if (sample >= rows) return 0;
  return std::max(sample, rows_within(options.final_eval_flops, rows, config));
}

std::vector<float> run_propensities(const TrainOptions& options, const Dataset& train) {
  if (!options.inv_propensity.empty()) {
    HETSGD_CHECK(static_cast<index_t>(options.inv_propensity.size()) == train.num_labels,
                 "inverse propensities for " << options.inv_propensity.size()
                                             << " labels, the training set has "
                                             << train.num_labels);
    return options.inv_propensity;
  }
  // A header may declare far more labels than the file holds (2^31 over three rows): the
  // per-label counts (double) and weights (float) are refused, naming that count, when they
  // cannot fit, instead of failing in the allocator.
  if (train.rows() >= 2) {
    check_memory(saturating_mul(static_cast<std::uint64_t>(train.num_labels), 12),
                 "counting the labels of '" + options.data_name + "' (num_labels " +
                     std::to_string(train.num_labels) + ")");
  }
  PropensityModel pm = propensity_model_for(options.data_name);
  if (options.psp_a > 0) pm.a = options.psp_a;
  if (options.psp_b > 0) pm.b = options.psp_b;
  return inverse_propensities(train, pm);
}

RankingMetrics evaluate(Device& device, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points, const std::vector<float>* inv_propensity,
                        const std::atomic<bool>* stop, std::vector<col_t>* topk) {
  Ranker ranker(device);
  return evaluate(ranker, test, k, batch_rows, max_points, inv_propensity, stop, topk);
}

RankingMetrics evaluate(Ranker& ranker, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points, const std::vector<float>* inv_propensity,
                        const std::atomic<bool>* stop, std::vector<col_t>* topk) {
  HETSGD_CHECK(k >= 1, "evaluate: k " << k << " < 1");
  HETSGD_CHECK(batch_rows >= 1, "evaluate: batch_rows " << batch_rows << " < 1");
  const index_t rows = max_points > 0 ? std::min(max_points, test.rows()) : test.rows();
  if (topk != nullptr) topk->clear();
  RankingMetrics m;
  CsrBatch batch;
  std::vector<col_t> labels;
  double loss_sum = 0.0;
  index_t scored = 0;
  for (index_t begin = 0; begin < rows; begin += batch_rows) {
    if (stop != nullptr && stop->load()) break;
    const index_t end = std::min(rows, begin + batch_rows);
    slice_rows(test, begin, end, &batch);
    labels.resize(static_cast<size_t>((end - begin) * k));
    const float loss = ranker.rank(batch, k, labels.data());
    loss_sum += static_cast<double>(loss) * static_cast<double>(end - begin);
    accumulate_ranking(batch, labels.data(), k, &m, inv_propensity);
    if (topk != nullptr) topk->insert(topk->end(), labels.begin(), labels.end());
    scored = end;
  }
  finish_ranking(&m);
  m.loss = scored > 0 ? loss_sum / static_cast<double>(scored) : 0.0;
  return m;
}

bool evaluate_indexed(Device& device, const Dataset& test, int k, index_t batch_rows,
                      IndexedEval* indexed, RankingMetrics* metrics,
                      const std::vector<float>* inv_propensity, const std::atomic<bool>* stop) {
  HETSGD_CHECK(k >= 1, "evaluate: k " << k << " < 1");
  HETSGD_CHECK(batch_rows >= 1, "evaluate: batch_rows " << batch_rows << " < 1");
  const index_t exact_rows = std::min(indexed->exact_rows, test.rows());
  if (exact_rows <= 0) return false;  // no rows to measure a recall on
  const auto list = [k](index_t row) { return static_cast<std::size_t>(row * k); };
  CsrBatch batch;
  std::vector<float> scores;
  // 1. The exact rows, scored exactly (unless the caller has their lists); their top-k lists
  // are kept for the recall.
  RankingMetrics exact;
  std::vector<col_t> exact_labels;
  const bool given = indexed->exact_topk.size() == list(exact_rows);
  if (given) {
    exact_labels = std::move(indexed->exact_topk);
    exact = indexed->exact;
  } else {
    exact_labels.resize(list(exact_rows));
  }
  double loss_sum = 0.0;
  for (index_t begin = given ? exact_rows : 0, end = 0; begin < exact_rows; begin = end) {
    if (stop != nullptr && stop->load()) return false;
    end = std::min(exact_rows, begin + batch_rows);
    slice_rows(test, begin, end, &batch);
    scores.resize(list(end - begin));
    const float loss =
        device.predict_topk(batch, k, exact_labels.data() + list(begin), scores.data());
    loss_sum += static_cast<double>(loss) * static_cast<double>(end - begin);
    accumulate_ranking(batch, exact_labels.data() + list(begin), k, &exact, inv_propensity);
  }
  if (!given) {
    finish_ranking(&exact);
    exact.loss = loss_sum / static_cast<double>(exact_rows);
  }
  // 2. The cheapest level of the search that finds enough of those top-k lists; when none
  // does, the one that found most of them, if that is at least kUsableIndexRecall.
  std::vector<col_t> labels(list(exact_rows)), best_labels;
  const auto worst = [k](const TopkRecall& r) {
    return std::min(r.at_k(1), r.at_k(std::min(k, 5)));
  };
  bool found = false;
  for (int level = 0; level < kMaxIndexLevels && !found; ++level) {
    TopkRecall recall;
    bool exists = true;
    for (index_t begin = 0, end = 0; begin < exact_rows; begin = end) {
      if (stop != nullptr && stop->load()) return false;
      end = std::min(exact_rows, begin + batch_rows);
      slice_rows(test, begin, end, &batch);
      scores.resize(list(end - begin));
      if (!indexed->topk(device, batch, k, level, labels.data() + list(begin), scores.data())) {
        HETSGD_CHECK(begin == 0, "evaluate: the search went away after row " << begin);
        exists = false;  // no such level: the best one tried stands in `indexed`
        break;
      }
      accumulate_topk_recall(exact_labels.data() + list(begin), labels.data() + list(begin),
                             end - begin, k, &recall);
    }
    if (!exists) break;
    finish_topk_recall(&recall);
    found = worst(recall) >= kMinIndexRecall;
    if (indexed->level < 0 || worst(recall) > worst(indexed->recall)) {
      indexed->level = level;
      indexed->recall = recall;
      best_labels = labels;
    }
  }
  if (indexed->level < 0 || worst(indexed->recall) < kUsableIndexRecall) return false;
  labels = std::move(best_labels);
  // 3. Every row ranked at that level: the exact rows' lists are already there, the rest go
  // in larger chunks (a clustered search reads each probed cluster once per chunk).
  RankingMetrics m;
  for (index_t begin = 0, end = 0; begin < exact_rows; begin = end) {
    end = std::min(exact_rows, begin + batch_rows);
    slice_rows(test, begin, end, &batch);
    accumulate_ranking(batch, labels.data() + list(begin), k, &m, inv_propensity);
  }
  const index_t chunk = std::max(batch_rows, kIndexedEvalChunk);
  for (index_t begin = exact_rows, end = 0; begin < test.rows(); begin = end) {
    if (stop != nullptr && stop->load()) break;
    end = std::min(test.rows(), begin + chunk);
    slice_rows(test, begin, end, &batch);
    labels.resize(list(end - begin));
    scores.resize(labels.size());
    HETSGD_CHECK(indexed->topk(device, batch, k, indexed->level, labels.data(), scores.data()),
                 "evaluate: the search went away after row " << begin);
    accumulate_ranking(batch, labels.data(), k, &m, inv_propensity);
  }
  finish_ranking(&m);
  m.loss = exact.loss;
  *metrics = m;
  indexed->used = true;
  indexed->exact = exact;
  return true;
}

namespace {
// The fastest device evaluates: evaluation time is reported, and on a mixed server the slowest
// device would dominate it. The others, in order, take over when it fails.
std::vector<int> fastest_alive_first(ReplicaSet& replicas, const std::vector<double>& throughput) {
  std::vector<int> order;
  for (int i = 0; i < replicas.size(); ++i) {
    if (replicas.alive(i)) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return throughput[a] > throughput[b]; });
  return order;
}
}  // namespace

RankingMetrics evaluate_centre(ReplicaSet& replicas, Centre& centre, bool swap,
                               const std::vector<double>& throughput, const Dataset& test, int k,
                               index_t batch_rows, index_t max_points,
                               const std::vector<float>* inv_propensity, std::vector<col_t>* topk) {
  RankingMetrics metrics;
  for (int slot : fastest_alive_first(replicas, throughput)) {
    Device& d = replicas.device(slot);
    const bool ok = replicas.run_on(slot, [&] {
      if (swap) centre.swap_in(d);
      metrics = evaluate(d, test, k, batch_rows, max_points, inv_propensity, nullptr, topk);
      if (swap) centre.swap_out(d);
    });
    if (ok) return metrics;
  }
  HETSGD_FAIL("evaluate_centre: no device left");  // run_on throws before this
}

RankingMetrics evaluate_model(ReplicaSet& replicas, const std::vector<float>& model,
                              const std::vector<double>& throughput, const Dataset& test, int k,
                              index_t batch_rows, index_t max_points,
                              const std::vector<float>* inv_propensity,
                              const std::atomic<bool>* stop, IndexedEval* indexed) {
  RankingMetrics metrics;
  for (int slot : fastest_alive_first(replicas, throughput)) {
    Device& d = replicas.device(slot);
    const bool ok = replicas.run_on(slot, [&] {
      d.write_params(model.data());
      if (indexed != nullptr &&
          evaluate_indexed(d, test, k, batch_rows, indexed, &metrics, inv_propensity, stop)) {
        return;
      }
      metrics = evaluate(d, test, k, batch_rows, max_points, inv_propensity, stop);
    });
    if (ok) return metrics;
  }
  HETSGD_FAIL("evaluate_model: no device left");
}

}  // namespace hetsgd
