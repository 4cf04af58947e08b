#include "core/engine/training_evaluations.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/engine/evaluation.h"
#include "core/engine/run_plan.h"

namespace hetsgd {

TrainingEvaluations::TrainingEvaluations(const TrainOptions& options,
                                         const TrainCallbacks& callbacks, const ModelConfig& config,
                                         const Dataset& train, const Dataset& test,
                                         const Dataset* val)
    : opt_(options),
      cb_(callbacks),
      config_(config),
      train_(train),
      test_(test),
      val_(val),
      inv_prop_(run_propensities(options, train)) {}

void TrainingEvaluations::set_round_samples(index_t round_samples) {
  s_ = round_samples;
  r_ = paced_eval_every();
}

// Sampled sets at large L: an in-training evaluation costs the same whatever the round, and
// at 670,091 labels two sets of 1,000 rows took about a third as long as the half epoch between
// them. The period is lengthened so that these evaluations take at most kEvalShare of the
// training, both costs estimated in flops from the model's shape and the data (never from
// measured seconds: which rounds are evaluated, and so which model keep-best selects, follows
// the data and the options, not the machine's load). Runs that evaluate every row keep the
// base period.
int TrainingEvaluations::paced_eval_every() const {
  const int base = resolve_eval_every(opt_, s_, train_.rows());
  if (opt_.eval_every_rounds > 0) return base;
  const index_t test_rows = in_training_eval_rows(opt_, test_.rows(), config_);
  const index_t val_rows = val_ != nullptr ? in_training_eval_rows(opt_, val_->rows(), config_) : 0;
  const bool sampled = test_rows < test_.rows() || (val_ != nullptr && val_rows < val_->rows());
  if (!sampled) return base;
  const double eval = static_cast<double>(test_rows + val_rows) * scoring_flops_per_row(config_);
  const double round =
      static_cast<double>(s_) * training_flops_per_sample(config_, train_, opt_.b0);
  const double need = std::ceil(eval / (kEvalShare * std::max(round, 1.0)));
  return need > static_cast<double>(base) ? static_cast<int>(std::min(need, 1e9)) : base;
}

EvalRecord TrainingEvaluations::score_centre(ReplicaSet& reps, Centre& centre, bool swap,
                                             const std::vector<double>& throughput,
                                             ModelSelector& selector, std::int64_t round,
                                             bool last) {
  auto eval_on = [&](const Dataset& set, index_t rows, std::vector<col_t>* topk) {
    return evaluate_centre(reps, centre, swap, throughput, set, opt_.eval_topk, opt_.eval_batch,
                           rows, &inv_prop_, topk);
  };
  // The final evaluation ranks through a search whose recall is measured on this sample's
  // rows: their exact lists are kept for it.
  const bool keep_topk =
      cb_.indexed_topk && final_eval_rows(opt_, test_.rows(), config_, val_rows()) > 0;
  std::vector<col_t> topk;
  EvalRecord rec;
  rec.metrics = eval_on(test_, in_training_test_rows(opt_, test_.rows(), val_rows(), config_),
                        keep_topk ? &topk : nullptr);
  if (val_ != nullptr) {
    rec.has_val = true;
    rec.val_metrics = eval_on(*val_, in_training_eval_rows(opt_, val_->rows(), config_), nullptr);
    rec.best = selector.offer(centre.evaluated(), rec.val_metrics, rec.metrics, round, last);
  }
  if (keep_topk) {
    last_sample_ = {round, std::move(topk), rec.metrics};
    if (rec.best) best_sample_ = last_sample_;
  }
  return rec;
}

// The in-training evaluations saw a sample of the test set: the selected model is scored once
// on the whole of it, exactly or through an approximate search (core/engine/evaluation.h).
void TrainingEvaluations::evaluate_selected(ReplicaSet& reps, const std::vector<double>& throughput,
                                            bool root, TrainResult* result) {
  TrainResult& res = *result;
  res.eval_sample_rows = in_training_test_rows(opt_, test_.rows(), val_rows(), config_);
  res.final_eval_rows = res.evals.empty() ? 0 : res.eval_sample_rows;
  const index_t rows = final_eval_rows(opt_, test_.rows(), config_, val_rows());
  if (!root || rows == 0 || res.model.empty() || reps.num_alive() == 0) return;
  // Exact scoring of every row is beyond the budget: an approximate search ranks them, its
  // recall measured on the sample's rows, whose exact lists the selected round left.
  IndexedEval indexed;
  indexed.topk = cb_.indexed_topk;
  indexed.exact_rows = res.eval_sample_rows;
  for (SampleTopk* s : {&best_sample_, &last_sample_}) {
    if (s->round == res.selected_round && indexed.exact_topk.empty()) {
      indexed.exact_topk = std::move(s->labels);
      indexed.exact = s->metrics;
    }
  }
  if (opt_.defer_final_eval) {  // the caller's evaluation may use the lists
    res.final_eval_deferred = true;
    res.sample_topk = std::move(indexed.exact_topk);
    res.exact_sample = indexed.exact;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const double loss = res.final_metrics.loss;
  const bool try_index = rows < test_.rows() && indexed.topk;
  RankingMetrics whole =
      evaluate_model(reps, res.model, throughput, test_, opt_.eval_topk, opt_.eval_batch, rows,
                     &inv_prop_, cb_.stop, try_index ? &indexed : nullptr);
  res.eval_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.index_recall = indexed.recall;  // measured also when too low to use the search
  res.index_level = indexed.level;
  const index_t scored = indexed.used ? test_.rows() : rows;
  // Interrupted (before or during the pass): the selected model's sampled metrics stand, with
  // final_eval_rows saying so; the signal is answered within one chunk, not after the pass.
  if (whole.rows < scored) return;
  res.final_metrics = whole;
  if (!std::isfinite(res.final_metrics.loss)) res.final_metrics.loss = loss;
  res.final_eval_rows = scored;
  res.final_indexed = indexed.used;
  if (indexed.used) res.exact_sample = indexed.exact;
}

}  // namespace hetsgd
