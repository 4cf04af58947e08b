#include "core/engine/train_options.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/engine/evaluation.h"
#include "core/error.h"

namespace hetsgd {

void TrainOptions::validate() const {
  HETSGD_CHECK(lr0 > 0.0, "lr0 " << lr0 << " must be > 0");
  HETSGD_CHECK(lambda >= 0.0, "lambda " << lambda << " must be >= 0");
  HETSGD_CHECK(decay_visits >= 0.0, "decay_visits " << decay_visits << " must be >= 0");
  HETSGD_CHECK(decay_min_points >= 0, "decay_min_points " << decay_min_points << " must be >= 0");
  HETSGD_CHECK(warmup_epochs >= 0.0, "warmup_epochs " << warmup_epochs << " must be >= 0");
  HETSGD_CHECK(warmup_batch >= 0, "warmup_batch " << warmup_batch << " must be >= 0");
  HETSGD_CHECK(warmup_start > 0.0 && warmup_start <= 1.0,
               "warmup_start " << warmup_start << " outside (0, 1]");
  HETSGD_CHECK(b0 >= 1, "b0 " << b0 << " must be >= 1");
  HETSGD_CHECK(round_samples >= 0, "round_samples " << round_samples << " must be >= 0");
  HETSGD_CHECK(merge_budget >= 0.0 && merge_budget < 1.0,
               "merge_budget " << merge_budget << " outside [0, 1)");
  HETSGD_CHECK(b_min >= 1, "b_min " << b_min << " must be >= 1");
  HETSGD_CHECK(b_min <= b0 && b0 <= b_max,
               "b0 " << b0 << " outside [b_min, b_max] = [" << b_min << ", " << b_max << "]");
  HETSGD_CHECK(batch_step >= 1, "batch_step " << batch_step << " must be >= 1");
  HETSGD_CHECK(throughput_ema > 0.0 && throughput_ema <= 1.0,
               "throughput_ema " << throughput_ema << " outside (0, 1]");
  HETSGD_CHECK(alpha > 0.0 && alpha <= 2.0, "alpha " << alpha << " outside (0, 2]");
  HETSGD_CHECK(beta > 0.0 && beta <= 1.0, "beta " << beta << " outside (0, 1]");
  HETSGD_CHECK(mu >= 0.0 && mu < 1.0, "mu " << mu << " outside [0, 1)");
  HETSGD_CHECK(easgd_tau >= 1, "easgd_tau " << easgd_tau << " must be >= 1");
  HETSGD_CHECK(easgd_rate >= 0.0 && easgd_rate <= 1.0,
               "easgd_rate " << easgd_rate << " outside [0, 1] (0 = auto)");
  HETSGD_CHECK(eval_every_rounds >= 0, "eval_every_rounds " << eval_every_rounds << " < 0");
  // P@5 and nDCG@5 need five predictions: a smaller k would silently lower them.
  HETSGD_CHECK(eval_topk >= 5 && eval_topk <= 100,
               "eval_topk " << eval_topk << " outside [5, 100]");
  HETSGD_CHECK(eval_batch >= 1, "eval_batch " << eval_batch << " must be >= 1");
  HETSGD_CHECK(eval_max_points >= kAutoEvalPoints,
               "eval_max_points " << eval_max_points << " < " << kAutoEvalPoints << " (auto)");
  HETSGD_CHECK(std::isfinite(psp_a) && psp_a >= 0, "psp_a " << psp_a << " is not >= 0");
  HETSGD_CHECK(std::isfinite(psp_b) && psp_b >= 0, "psp_b " << psp_b << " is not >= 0");
  HETSGD_CHECK(ema >= 0.0 && ema < 1.0, "ema " << ema << " outside [0, 1)");
  HETSGD_CHECK(patience >= kAutoPatience, "patience " << patience << " < 0");
  HETSGD_CHECK(time_budget_s >= 0.0, "time_budget_s " << time_budget_s << " < 0");
  HETSGD_CHECK(max_epochs >= 0.0 || max_epochs == kAutoEpochs,
               "max_epochs " << max_epochs << " < 0");
  HETSGD_CHECK(max_rounds >= 0, "max_rounds " << max_rounds << " < 0");
  HETSGD_CHECK(target_p1 >= 0.0 && target_p1 <= 1.0,
               "target_p1 " << target_p1 << " outside [0, 1]");
  HETSGD_CHECK(time_budget_s > 0.0 || max_epochs != 0.0 || max_rounds > 0,
               "no stopping rule: set a time budget, max_epochs or max_rounds");
  HETSGD_CHECK(checkpoint_every_rounds >= 0,
               "checkpoint_every_rounds " << checkpoint_every_rounds << " < 0");
}

double mid_range_epochs(index_t train_rows, double pass_epochs) {
  const double most = kMidRangeEpochs * std::max(1.0, pass_epochs);
  if (train_rows <= 0) return most;
  const double by_samples = kMidRangeSamples / static_cast<double>(train_rows);
  return std::clamp(by_samples, kMidRangeMinEpochs, most);
}

void resolve_schedule(const ModelConfig& config, const RunRows& rows, TrainOptions* o) {
  const index_t train_rows = rows.train;
  const bool has_val = rows.val > 0;
  // A time budget or a round count sets the run's length: the auto parts then stand aside.
  const bool auto_length =
      o->max_epochs == kAutoEpochs && o->time_budget_s == 0.0 && o->max_rounds == 0;
  const bool auto_patience = o->patience == kAutoPatience;
  if (o->max_epochs == kAutoEpochs) {
    const bool mid_range = config.uses_shortlist() && config.num_labels <= kWideModelMaxLabels;
    o->max_epochs =
        auto_length && mid_range ? mid_range_epochs(train_rows, rows.pass_epochs) : kDefaultEpochs;
  }
  if (!auto_patience) return;
  o->patience = auto_length && has_val ? kAutoPatienceEvaluations : 0;
  // Patience ends the run: the cap only bounds it (kAutoMinSamples). Not where evaluations
  // score samples of a large label space: their period is then paced by their cost and may
  // span epochs (wiki10-31k's shape: one in 8.7 epochs), too seldom for patience to end a
  // raised cap; it trained all 23.6 epochs the floor gave it, 101 s against 30 s, for a lower
  // validation sum.
  const bool sampled = in_training_eval_rows(*o, rows.test, config) < rows.test ||
                       in_training_eval_rows(*o, rows.val, config) < rows.val;
  if (o->patience > 0 && train_rows > 0 && !sampled)
    o->max_epochs = std::max(o->max_epochs, kAutoMinSamples / static_cast<double>(train_rows));
}

RunFootprint TrainOptions::footprint() const {
  RunFootprint f;
  f.dense_output_gradient = algo == Algo::kSync;
  f.centre_history = mu != 0.0 || algo == Algo::kEasgd;
  f.elastic = algo == Algo::kEasgd;
  f.best_in_memory = keep_best && best_model_file.empty();
  f.average = ema > 0.0;
  f.batch_rows = std::max(eval_batch, b_max);
  return f;
}

std::string TrainOptions::trajectory_text() const {
  std::ostringstream os;
  os.precision(17);
  os << "algo=" << to_string(algo) << " lr0=" << lr0 << " lr_scaling=" << to_string(lr_scaling)
     << " lr_batch=" << to_string(lr_batch) << " lambda=" << lambda
     << " decay_visits=" << decay_visits << " decay_min_points=" << decay_min_points
     << " warmup_epochs=" << warmup_epochs << " warmup_batch=" << warmup_batch
     << " warmup_start=" << warmup_start << " b0=" << b0 << " round_samples=" << round_samples
     << " merge_budget=" << merge_budget << " batch_policy=" << to_string(batch_policy)
     << " b_min=" << b_min << " b_max=" << b_max << " batch_step=" << batch_step
     << " throughput_ema=" << throughput_ema << " merge_weights=" << to_string(merge_weights)
     << " alpha=" << alpha << " beta=" << beta << " mu=" << mu << " easgd_tau=" << easgd_tau
     << " easgd_rate=" << easgd_rate << " ema=" << ema
     << " deterministic=" << (deterministic ? 1 : 0) << " seed=" << seed;
  return os.str();
}

template <>
const NameTable<Algo>& name_table<Algo>() {
  static const NameTable<Algo> t = {{"adaptive", Algo::kAdaptive},
                                    {"sync", Algo::kSync},
                                    {"avg", Algo::kAvg},
                                    {"easgd", Algo::kEasgd}};
  return t;
}

template <>
const NameTable<BatchPolicy>& name_table<BatchPolicy>() {
  static const NameTable<BatchPolicy> t = {{"paper", BatchPolicy::kPaper},
                                           {"proportional", BatchPolicy::kProportional},
                                           {"fixed", BatchPolicy::kFixed}};
  return t;
}

template <>
const NameTable<MergeWeights>& name_table<MergeWeights>() {
  static const NameTable<MergeWeights> t = {{"updates", MergeWeights::kUpdates},
                                            {"samples", MergeWeights::kSamples},
                                            {"uniform", MergeWeights::kUniform}};
  return t;
}

template <>
const NameTable<LrScaling>& name_table<LrScaling>() {
  static const NameTable<LrScaling> t = {{"auto", LrScaling::kAuto},
                                         {"linear", LrScaling::kLinear},
                                         {"sqrt", LrScaling::kSqrt},
                                         {"none", LrScaling::kNone}};
  return t;
}

template <>
const NameTable<LrBatch>& name_table<LrBatch>() {
  static const NameTable<LrBatch> t = {{"round", LrBatch::kRound}, {"device", LrBatch::kDevice}};
  return t;
}

Algo parse_algo(const std::string& name) { return parse_enum<Algo>(name, "algorithm"); }
const char* to_string(Algo algo) { return enum_name(algo); }
BatchPolicy parse_batch_policy(const std::string& name) {
  return parse_enum<BatchPolicy>(name, "batch policy");
}
const char* to_string(BatchPolicy policy) { return enum_name(policy); }
MergeWeights parse_merge_weights(const std::string& name) {
  return parse_enum<MergeWeights>(name, "merge weights");
}
const char* to_string(MergeWeights weights) { return enum_name(weights); }
const char* to_string(LrScaling scaling) { return enum_name(scaling); }
LrBatch parse_lr_batch(const std::string& name) { return parse_enum<LrBatch>(name, "lr batch"); }
const char* to_string(LrBatch batch) { return enum_name(batch); }

LrScaling resolve_lr_scaling(LrScaling scaling, OptimizerKind optimizer) {
  if (scaling != LrScaling::kAuto) return scaling;
  return optimizer == OptimizerKind::kSgd ? LrScaling::kLinear : LrScaling::kSqrt;
}

}  // namespace hetsgd
