/// \file core/engine/train_options.h
/// Every knob of the training engine (core/engine/README.md), each with its
/// default.
///
/// The defaults are hetsgd's Adaptive SGD (core/engine/README.md §Adaptive SGD): `proportional`
/// batch sizing, `samples` merge weights, plain model averaging (alpha = beta = 1, mu = 0), and
/// square-root learning-rate scaling with the batch size when the devices run Adam (linear
/// scaling when they run SGD). The schedule is `hetsgd train`'s (apps/DEFAULTS.md): lr0 = 4e-3 at
/// b0 = 128 without warm-up, decayed as lr0 / (1 + 0.5 epochs), for every output layer.
/// `samples` rather than the paper's `updates`: once `proportional` has equalised the update
/// counts, `updates` weighs a slow device's replica (trained on fewer points) like a fast one's;
/// on delicious with cpu:0 + cpu:1@0.33 it needed ~10 epochs to P@1 0.64 against ~13.
/// Every device steps with the learning rate of the round's global batch sum_j b_j (LrBatch::
/// kRound), the rate sync gives its K * b0 batch: with `samples` weights a merged local step
/// is then sync's step, and the centre no longer trails sync by sum b_i^2 / B^2 per round
/// (delicious: 5.4-5.9 epochs to P@1 0.62 against 6.5 with per-device rates; sync 5.2).
/// Rounds hold at least 8 global batches (fast device busy ~95% of a round instead of ~84%).
/// The command line maps one flag to each field (lr_batch and stop_at_target have none yet);
/// `--help` prints these defaults.
#pragma once

#include <cstdint>
#include <string>

#include "core/enum_names.h"
#include "core/memory_budget.h"
#include "core/model_config.h"
#include "core/types.h"

namespace hetsgd {

/// TrainOptions::eval_max_points: a sample sized by the cost of scoring it.
inline constexpr index_t kAutoEvalPoints = -1;

/// Training algorithm run by the engine.
enum class Algo {
  kAdaptive,  ///< Adaptive SGD: dynamic batches from a shared cursor, per-device b_i, merges
  kSync,      ///< synchronous SGD: equal shares of a global batch, gradient all-reduce
  kAvg,       ///< static model averaging (the paper's "GD"): equal split, uniform weights
  kEasgd,     ///< synchronous elastic averaging SGD (Zhang et al. 2015)
};

/// How the per-device batch sizes b_i change after each round (adaptive only).
enum class BatchPolicy {
  kPaper,         ///< +-step within [b_min, b_max] when n_i / sum n is above/below 1/K
  kProportional,  ///< b_i from each device's smoothed throughput, sum b_i = K * b0
  kFixed,         ///< b_i = b0 for ever
};

/// Merge weights p_i (always normalised to sum 1).
enum class MergeWeights {
  kUpdates,  ///< p_i = n_i / sum n (the paper)
  kSamples,  ///< p_i = m_i / sum m
  kUniform,  ///< p_i = 1 / K
};

/// How a device's learning rate grows with its batch size relative to b0.
enum class LrScaling {
  kAuto,    ///< linear for SGD, square root for Adam (decided from the devices' optimiser)
  kLinear,  ///< lr0 * b / b0 (the paper; Goyal et al.)
  kSqrt,    ///< lr0 * sqrt(b / b0) (the usual rule for adaptive optimisers)
  kNone,    ///< lr0
};

/// Which batch size the learning-rate scaling of a model-averaging step (adaptive, avg) uses.
enum class LrBatch {
  /// B = sum_j b_j over the alive devices (the round's global batch): every device steps with
  /// lr0 * s(B / b0), the rate sync gives its global batch. With `samples` merge weights
  /// p_i = b_i / B, a round of one local step then IS one sync step on B points (SGD:
  /// sum_i p_i lr g_i = lr g_B, variance lr^2 sigma^2 / B), so the centre advances per point
  /// as fast as sync's model does.
  kRound,
  /// b_i, the device's own batch: lr_i = lr0 * s(b_i / b0) (the paper). The merged step is
  /// then lr0 / b0 * sum_i b_i^2 / B * g for linear scaling: shorter than sync's step by the
  /// factor sum b_i^2 / B^2 (0.76 at b = 221/35), so the centre needs that many more epochs.
  kDevice,
};

/// Exact-scoring budget of the final evaluation when TrainOptions::exact_eval is off (the
/// default of TrainOptions::final_eval_flops; core/engine/evaluation.h has the plan).
inline constexpr double kFinalEvalFlops = 1e12;

/// TrainOptions::max_epochs that follows the output layer (resolve_schedule()): kDefaultEpochs,
/// or mid_range_epochs() for a shortlisted layer of at most kWideModelMaxLabels labels.
inline constexpr double kAutoEpochs = -1.0;
inline constexpr double kDefaultEpochs = 25.0;
/// Epochs of the middle range's auto schedule, chosen on the validation split of debian-deps
/// (apps/DEFAULTS.md): the saved model's validation P@1 + P@3 + P@5 rises from 6 epochs
/// (1.6780) to 8 (1.6837) and hardly after (10: 1.6854, 25% more time); the run takes about
/// twice napkinXC PLT's train + predict time (tools/RESULTS.md). They are passes of the decay's
/// clock (decay_unit()), epochs where the mean label is seen at least decay_visits times an
/// epoch (debian-deps): on a set of 43,849 rarer labels (4.5 visits an epoch) 8 epochs left the
/// network at validation P@1 + P@3 + P@5 0.4964, 8 passes (14.2 epochs) 0.5627.
inline constexpr double kMidRangeEpochs = 8.0;
/// Samples the middle range's auto schedule trains at most: more rows get fewer epochs (at
/// least kMidRangeMinEpochs), so that a run's time stops growing with its rows past about
/// 370,000 of them (at the amazoncat-13k shape, 1.19 million rows, 8 epochs would take well
/// over an hour on two cores; apps/DEFAULTS.md).
inline constexpr double kMidRangeSamples = 3.0e6;
inline constexpr double kMidRangeMinEpochs = 1.0;

/// TrainOptions::patience that follows the data (resolve_schedule()): kAutoPatienceEvaluations
/// evaluations where the run's length is auto and it has validation data, none otherwise. At the
/// default cadence (an evaluation every half epoch) that is about 4 epochs: with lr 4e-3 decayed
/// per epoch, bibtex, delicious and debian-tags peaked on validation after 6.5 to 8 epochs and
/// never rose above that peak in the 17 to 19 epochs that followed (apps/DEFAULTS.md).
inline constexpr int kAutoPatience = -1;
inline constexpr int kAutoPatienceEvaluations = 8;
/// With kAutoPatience, validation data and in-training evaluations of every row (not samples,
/// whose cost paces them, resolve_schedule()), a run trains at least this many samples:
/// max_epochs is raised to kAutoMinSamples / rows where that is more, and patience ends the
/// run when validation stops improving. A small set gets few steps in a fixed epoch count:
/// debian-deps' 8 epochs are 320,000 samples, but the same 8 epochs of a 9,407-row set of
/// 6,806 labels from the same archive scored validation P@1+P@3+P@5 0.7182 against 0.8720
/// at 24 epochs, and a 5,143-row set of 3,166 labels 0.7145 at 25 epochs against 0.7460 with
/// room to 80 (apps/DEFAULTS.md). Where patience stops a run before its cap (bibtex,
/// delicious, debian-tags), the raised cap changes nothing.
inline constexpr double kAutoMinSamples = 3.0e5;

/// Every option of one training run. Plain value type; validate() checks the bounds.
struct TrainOptions {
  // ---- algorithm ----
  Algo algo = Algo::kAdaptive;  ///< which scheduler runs

  // ---- learning rate (core/engine/README.md §Adaptive SGD) ----
  // lr0 and lambda were chosen first for the shortlist on the validation split of
  // amazon-670k-shaped synthetic data (--scale=0.2, one epoch, hidden 128, batch 128):
  // validation P@1 0.040 at lr 5e-4 with a half-epoch warm-up, 0.058 without warm-up, 0.152 /
  // 0.206 / 0.236 / 0.224 / 0.191 at lr 1e-3 / 2e-3 / 4e-3 / 8e-3 / 1.6e-2 without: a shortlisted
  // step updates only the batch's positives and sampled negatives, so each label row needs a
  // large step. The full layer had lr 5e-4 with a half-epoch warm-up and no decay; with this
  // schedule its validation P@1 + P@3 + P@5 went 1.3725 -> 1.3708 on bibtex, 1.9227 -> 1.9325
  // on delicious and 2.0080 -> 2.0287 on debian-tags, peaking after 6.5 to 8 epochs instead of
  // 22 to 24 (apps/DEFAULTS.md). The decay keeps a rate that high from ending a long run
  // unsettled: validation P@1 with lambda 0 and 0.5, 0.393 / 0.403 after ten epochs at
  // --scale=0.2, 0.141 / 0.311 after about 26 epochs of 45,000 amazon-3m-shaped rows.
  double lr0 = 4e-3;                        ///< base learning rate at batch size b0 (Adam)
  LrScaling lr_scaling = LrScaling::kAuto;  ///< lr as a function of the batch size
  LrBatch lr_batch = LrBatch::kRound;       ///< adaptive/avg: scale lr by sum_j b_j or by own b_i
  double lambda = 0.5;  ///< decay: lr / (1 + lambda * (e - warmup_epochs)) after warm-up
  /// The decay's clock, e, counts passes in which the mean label is seen at least this many
  /// times (decay_unit(), core/engine/lr_schedule.h; 0 = epochs). Where most labels have a row
  /// or two, an epoch gives each output row one or two positive steps and per epoch the rate
  /// fell to a twentieth before those rows had learnt: two Debian package sets of 3.2 and 3.4
  /// label visits an epoch went 0.746 -> 0.7808 and 0.9207 -> 0.9858 of validation
  /// P@1+P@3+P@5, network alone (apps/DEFAULTS.md). bibtex (66 visits an epoch), delicious
  /// (225), debian-tags (130) and debian-deps (8.6) keep their per-epoch clock.
  double decay_visits = 8.0;
  /// ... and at least this many points (0 = no floor): on a set of a thousand rows an epoch is
  /// eight steps of 128, and a decay per epoch cut the rate to a fortieth within 300 steps,
  /// before the network had learnt. With the floor, on 27 training sets of 400 to 2,500 rows
  /// drawn from eight real sets' training files, the network alone scored 0.068 more held-out
  /// P@1+P@3+P@5 on average (better on 26) in under half the time (apps/DEFAULTS.md). Every
  /// set of more rows keeps its clock: bibtex's 4,392 training rows, delicious, debian-tags and
  /// debian-deps. 4,096 points: 32 steps of the base batch of 128.
  index_t decay_min_points = 4096;
  double warmup_epochs = 0.0;  ///< E_w: epochs of linear warm-up (0 = none)
  index_t warmup_batch = 0;    ///< batch size of every device during warm-up (0 = b0)
  double warmup_start = 0.01;  ///< warm-up ramps lr from warmup_start * lr to lr

  // ---- batches and rounds ----
  index_t b0 = 128;  ///< base batch size per device; sync's global batch is K * b0
  /// S: points per round (mega-batch) over all devices; 0 = auto: max(N / 16, 8 * K * b0),
  /// capped at N: at most sixteen merges per epoch, and at least eight global batches per
  /// round so that the round's fixed costs (barrier tail of at most one batch of the slowest
  /// device, the merge, waking the workers) stay a few percent of it.
  index_t round_samples = 0;
  /// Auto S grows with the merge's cost: after a round (not the first) whose merge took more
  /// than this share of its wall time, S doubles for the rounds after it, up to N / 4 (adaptive
  /// and avg, round_samples 0). At 670,091 labels a merge moves about 0.2 GB of touched rows,
  /// a sixth of a two-worker round at N / 16. 0 = S stays fixed. Timing decides it, so it is
  /// off for deterministic runs and across nodes.
  double merge_budget = 0.1;
  BatchPolicy batch_policy = BatchPolicy::kProportional;  ///< adaptive only
  index_t b_min = 32;                                     ///< smallest per-device batch size
  index_t b_max = 1024;                                   ///< largest per-device batch size
  index_t batch_step = 32;                                ///< `paper` policy's step
  double throughput_ema = 0.5;  ///< `proportional`: weight of the newest round in r_i

  // ---- merging (core/engine/README.md §Adaptive SGD) ----
  MergeWeights merge_weights = MergeWeights::kSamples;  ///< p_i
  double alpha = 1.0;  ///< elastic rate of the centre: Z' = Z + alpha (A - Z) + mu (Z - Z_prev)
  double beta = 1.0;   ///< replicas: W_i += beta (Z' - W_i); 1 = restart from Z'
  double mu = 0.0;     ///< block momentum of the centre

  // ---- EASGD (core/engine/README.md §Baselines) ----
  int easgd_tau = 4;        ///< local steps between elastic updates
  double easgd_rate = 0.0;  ///< moving rate a; 0 = auto = 0.9 / K (Zhang et al.)

  // ---- evaluation (core/engine/evaluation.h: the plan) ----
  int eval_every_rounds = 0;  ///< R; 0 = auto = about two evaluations per epoch
  int eval_topk = 5;          ///< k of predict_topk (>= 5 for P@5 / nDCG@5)
  index_t eval_batch = 2048;  ///< rows per predict_topk call
  /// In-training evaluations (the curve, keep-best, patience) use the first this many rows of
  /// the test and validation sets; 0 = all; kAutoEvalPoints = all when scoring them costs at
  /// most kEvalFlops, else a bounded sample (in_training_eval_rows()).
  index_t eval_max_points = kAutoEvalPoints;
  /// The selected model is evaluated once more at the end on the whole test set when the
  /// in-training evaluations saw a sample of it. True: exactly, whatever it costs; false:
  /// exactly when that costs at most final_eval_flops, else through an approximate search
  /// that scores its candidates exactly (label clusters; core/engine/evaluation.h), or when
  /// its recall is too low, or there is none, on final_eval_flops' worth of rows.
  bool exact_eval = false;
  /// Exact-scoring budget of the final evaluation (flops). Not a command-line option: tests
  /// lower it to take the indexed path on small models.
  double final_eval_flops = kFinalEvalFlops;
  /// The final evaluation (exact or through the search) is left to the caller
  /// (TrainResult::final_eval_deferred): run_pipeline() sets it when calibration scores the
  /// test set through the model it saves, so the rows are not scored twice. Not a
  /// command-line option.
  bool defer_final_eval = false;
  bool eval_at_start = false;  ///< record the untrained model at time 0 (only when asked)
  /// A and B of the propensities of PSP@k / PSnDCG@k (core/metrics.h); 0 = by the data set's
  /// name (propensity_model_for) or the repository's 0.55 / 1.5.
  double psp_a = 0.0;
  double psp_b = 0.0;
  std::string data_name;  ///< preset or training file name, for the propensity defaults
  /// Inverse propensities for PSP@k (one per label), computed by the caller from the whole
  /// training file before a validation split takes rows out of it, so that `train` and `eval`
  /// on the same file agree (pyxclib counts every training row). Empty: computed from the
  /// training set the run receives.
  std::vector<float> inv_propensity;

  /// Decay of an exponential moving average of the centre over rounds (0 = off). When on, the
  /// average is the model that is evaluated, selected and saved; training continues from Z.
  double ema = 0.0;
  // ---- model selection (needs a validation set: see train()) ----
  /// The saved model and the reported final metrics are those of the evaluation with the best
  /// validation P@1+P@3+P@5 (RankingMetrics::p135(); false: the last centre).
  bool keep_best = true;
  /// Keep that best model in this file instead of in memory ("" = in memory): one model copy
  /// less for the whole run (0.41 GB at 670,091 labels), for one write per improvement. The
  /// run removes the file when it ends; checkpoints still hold the best model.
  std::string best_model_file;
  /// Stop after this many evaluations in a row without a better validation P@1+P@3+P@5 (0 =
  /// never; kAutoPatience: resolve_schedule()'s).
  int patience = kAutoPatience;
  // ---- stopping (whichever comes first; at least one must be set) ----
  double time_budget_s = 0.0;       ///< training wall time (evaluation excluded); 0 = none
  double max_epochs = kAutoEpochs;  ///< points consumed / N; 0 = none; auto: resolve_schedule()
  index_t max_rounds = 0;           ///< rounds; 0 = none
  double target_p1 = 0.0;           ///< record the time to the first evaluation with P@1 >= this
  /// Stop once target_p1 is reached (false: keep going to the other limits, still recording
  /// the time to target; compare() races this way so that final metrics share one budget).
  bool stop_at_target = true;

  // ---- reproducibility and persistence ----
  std::uint64_t seed = 1;  ///< shuffling seed (the model's init seed is in ModelConfig)
  /// Adaptive rounds hand their batches out in slot order before the devices start, instead
  /// of to whichever device is free: the points each replica trains then depend only on the
  /// seed and the batch sizes, so a run (and a resumed run) is reproducible bit for bit. Off
  /// by default: the dynamic pull is what lets fast devices take more. The `proportional`
  /// batch policy follows measured throughput, so it keeps every device at b0 here.
  bool deterministic = false;
  std::string checkpoint_path;      ///< write a checkpoint here ("" = never)
  int checkpoint_every_rounds = 0;  ///< also every this many rounds (0 = only at the end)
  std::string resume_path;          ///< continue from this checkpoint ("" = fresh start)
  /// TrainResult::state and TrainResult::centre hold the whole final state (centre, moments,
  /// replicas) to continue from. False: only its counters and device totals, and no centre
  /// beside the selected model, so a run that will not continue (the command line's train and
  /// compare) ends without copying model-sized buffers: at 670,091 labels the copies of a
  /// replica's Adam moments alone are 0.8 GB. Checkpoints are complete either way.
  bool keep_final_state = true;

  /// Throws InvalidArgument naming the field, its value and the bound.
  void validate() const;
  /// What a run of these options holds beside its replicas (core/memory_budget.h).
  RunFootprint footprint() const;
  /// Canonical text of every option that shapes the trajectory (not the stopping, evaluation
  /// or path options); checkpoints store it so that a resume with other options is refused.
  std::string trajectory_text() const;
};

/// Name tables (core/enum_names.h): the parser, --help and to_string() all use these.
template <>
const NameTable<Algo>& name_table<Algo>();
template <>
const NameTable<BatchPolicy>& name_table<BatchPolicy>();
template <>
const NameTable<MergeWeights>& name_table<MergeWeights>();
template <>
const NameTable<LrScaling>& name_table<LrScaling>();
template <>
const NameTable<LrBatch>& name_table<LrBatch>();

/// "adaptive" | "sync" | "avg" | "easgd" <-> Algo. Throws InvalidArgument on other names.
Algo parse_algo(const std::string& name);
/// Lower-case name of `algo`.
const char* to_string(Algo algo);
/// "paper" | "proportional" | "fixed" <-> BatchPolicy.
BatchPolicy parse_batch_policy(const std::string& name);
/// Lower-case name of `policy`.
const char* to_string(BatchPolicy policy);
/// "updates" | "samples" | "uniform" <-> MergeWeights.
MergeWeights parse_merge_weights(const std::string& name);
/// Lower-case name of `weights`.
const char* to_string(MergeWeights weights);
/// Lower-case name of `scaling` ("auto" | "linear" | "sqrt" | "none").
const char* to_string(LrScaling scaling);
/// "round" | "device" <-> LrBatch.
LrBatch parse_lr_batch(const std::string& name);
/// Lower-case name of `batch`.
const char* to_string(LrBatch batch);

/// Epochs of the middle range's auto schedule for `train_rows` training rows (0 = unknown)
/// whose learning-rate decay counts passes of `pass_epochs` epochs (pass_epochs(), >= 1):
/// kMidRangeEpochs passes, or kMidRangeSamples / train_rows epochs where that is fewer, at
/// least kMidRangeMinEpochs. Where labels are rare a pass is longer than an epoch, and the run
/// with it: each label row of the output layer learns from about as many of its positives as
/// at debian-deps' shape (apps/DEFAULTS.md, "The middle range").
double mid_range_epochs(index_t train_rows, double pass_epochs = 1.0);

/// The sets a run trains, reports and selects on, by their row counts (0 validation rows: none),
/// and the training set's decay pass in epochs (pass_epochs()).
struct RunRows {
  index_t train = 0;
  index_t test = 0;
  index_t val = 0;
  double pass_epochs = 1.0;
};

/// Resolves the schedule's auto values for a run of `config` on sets of `rows`: what the
/// trainer follows, and what a progress line shows. The run's length is auto where max_epochs
/// is kAutoEpochs and no time budget or round count is set. Then max_epochs is
/// mid_range_epochs(rows.train, rows.pass_epochs) for a shortlisted layer of at most
/// kWideModelMaxLabels labels, else kDefaultEpochs; and where patience is kAutoPatience and there
/// is validation data, patience is kAutoPatienceEvaluations and, where in-training evaluations
/// score every row of both sets, max_epochs is raised to kAutoMinSamples / rows.train where that is
/// more. Otherwise an auto max_epochs is kDefaultEpochs and auto patience none.
void resolve_schedule(const ModelConfig& config, const RunRows& rows, TrainOptions* options);

/// Resolves kAuto from the devices' optimiser: linear for SGD, sqrt for Adam.
LrScaling resolve_lr_scaling(LrScaling scaling, OptimizerKind optimizer);

}  // namespace hetsgd
