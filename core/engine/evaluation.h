/// \file core/engine/evaluation.h
/// Evaluation of a model replica on a test set (core/metrics.h) and the evaluation plan of a
/// run: what the in-training evaluations and the final one cost.
///
/// Exact scoring costs 2 L h flops per row (L labels, last hidden width h): at 670,091 labels
/// and h = 128, 172 MFLOP a row, so Amazon-670K's 153,025 test rows are 26 TFLOP, more than a
/// shortlisted training epoch. In-training evaluations therefore score a sample of at most
/// kEvalFlops (at least kMinEvalRows rows), and the selected model is scored once at the end on
/// the whole test set: exactly when that costs at most kFinalEvalFlops (or with
/// TrainOptions::exact_eval), else ranked by an approximate search that scores its candidates
/// exactly (TrainCallbacks::indexed_topk; kernels' is a head of high-bias labels plus k-means
/// label clusters built from the evaluated weights). The search has levels, each scoring more
/// of the labels: the in-training sample's rows are scored exactly first, and the lowest
/// level whose recall@1 and recall@5 against that exact top-k reach kMinIndexRecall ranks
/// every row; when none does, the level with the highest recall ranks them if that recall is
/// at least kUsableIndexRecall. Otherwise (or when there is no search: a GPU replica), the
/// final budget's kFinalEvalFlops of rows are scored exactly.
#pragma once

#include <atomic>
#include <functional>

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/centre.h"
#include "core/engine/replica_set.h"
#include "core/engine/train_options.h"
#include "core/metrics.h"
#include "core/model/ranker.h"

namespace hetsgd {

/// Exact-scoring budget of one in-training evaluation of one set (about a second or two of a
/// two-core CPU): every row of bibtex, delicious or wiki10-31k, 1,000 rows at 670K labels.
inline constexpr double kEvalFlops = 1e11;
/// Fewest rows an auto-sized in-training sample has (P@1 within about +-1.5 points).
inline constexpr index_t kMinEvalRows = 1000;
/// Largest share of the training time that in-training evaluations of sampled sets take: the
/// automatic evaluation period is lengthened to keep them within it (core/engine/README.md).
inline constexpr double kEvalShare = 0.08;
/// Test rows per call of an indexed final evaluation past its exact rows (larger calls let a
/// clustered search read each label cluster fewer times).
inline constexpr index_t kIndexedEvalChunk = 32768;
/// Least recall@1 and recall@5 against exact scoring, on the in-training sample's rows, at
/// which the cheapest level of the search is taken: metrics ranked by a search that misses
/// more of the exact top-k are biased by more than their sampling error.
inline constexpr double kMinIndexRecall = 0.95;
/// When no level reaches kMinIndexRecall, the level with the highest recall still ranks the
/// whole test set if its recall@1 and recall@5 are at least this (the recall and the sample's
/// exact metrics are reported beside): at lower recall the metrics would describe the search
/// more than the model, and the final budget's rows are scored exactly instead.
inline constexpr double kUsableIndexRecall = 0.80;

/// Search levels an indexed evaluation tries at most (a search with fewer says so).
inline constexpr int kMaxIndexLevels = 8;

/// Approximate top-k of a device's model at search level `level` (0 = the cheapest; each
/// higher level finds more of the exact top-k at a higher cost), as rows*k arrays like
/// Device::predict_topk, every returned label scored exactly. Returns false, writing nothing,
/// when the device has no such search or no such level.
using IndexedTopk = std::function<bool(Device&, const CsrBatch&, int k, int level, col_t*, float*)>;

/// An indexed evaluation's request and report (evaluate_model()).
struct IndexedEval {
  IndexedTopk topk;        ///< the search (required)
  index_t exact_rows = 0;  ///< first rows also scored exactly, for the recall
  bool used = false;       ///< out: the search ranked the rows (false: exact scoring)
  int level = -1;          ///< out: the search level used, or the best one tried
  TopkRecall recall;       ///< out: recall@1..5 of that level's top-k on the exact rows (also
                           ///< when it was below kUsableIndexRecall and the search not used)
  /// In, optional: the exact rows' exact top-k lists (exact_rows x k) from an earlier exact
  /// evaluation of the same model, with their metrics in `exact`; they are not scored again
  /// (at 2.8M labels 1,000 rows cost about 4.5 s of two cores).
  std::vector<col_t> exact_topk;
  RankingMetrics exact;  ///< out (in with exact_topk): the exact metrics of those rows
};

/// Flops of exactly scoring one row of `config` (2 L h).
double scoring_flops_per_row(const ModelConfig& config);

/// Flops of one training sample of `config` on `train` (forward and backward, about three
/// forward passes): the sparse input layer at the data's mean row length, the dense layers,
/// and the output layer over every label, or over a shortlist's candidates (a batch of `b0`
/// rows' hard negatives and positives plus the sampled negatives).
double training_flops_per_sample(const ModelConfig& config, const Dataset& train, index_t b0);

/// Rows of a set of `rows` that an in-training evaluation uses (see eval_max_points).
index_t in_training_eval_rows(const TrainOptions& options, index_t rows, const ModelConfig& config);

/// Rows of a test set of `rows` that an in-training evaluation scores: in_training_eval_rows(),
/// and with the automatic eval_max_points and validation data (`val_rows` > 0) at most
/// max(kMinEvalRows, val_rows). The test set only reports: keep-best and patience read the
/// validation rows, so the curve's test points need no more rows than they have, and the final
/// evaluation scores the selected model on the rest (five-field set: in-training evaluations
/// 12.4 -> 6.2 s of a 37 s run, the same model). The evaluations' period and the schedule
/// follow in_training_eval_rows() (TrainingEvaluations, resolve_schedule()), as before.
index_t in_training_test_rows(const TrainOptions& options, index_t rows, index_t val_rows,
                              const ModelConfig& config);

/// Rows of the test set the final evaluation scores; 0 when the in-training evaluations already
/// scored all `rows` (their metrics stand). `val_rows` as for in_training_test_rows().
index_t final_eval_rows(const TrainOptions& options, index_t rows, const ModelConfig& config,
                        index_t val_rows = 0);

/// options.inv_propensity when set, else the inverse propensities of `train` with
/// options.psp_a / psp_b, or the data set's defaults.
std::vector<float> run_propensities(const TrainOptions& options, const Dataset& train);

/// Runs `device`'s current parameters over `test` (its first `max_points` rows, 0 = all) in
/// chunks of `batch_rows`, asking for the top `k` labels (k >= 5 for the @5 metrics). Returns
/// finished means; `loss` is the row-weighted mean of predict_topk's losses. Call from the
/// thread that drives `device` (or while its worker is idle). With `inv_propensity`
/// (core/metrics.h) the propensity-scored metrics are computed too. When `stop` is or becomes
/// true the pass ends before the next chunk, so that a signal is answered within one chunk:
/// the metrics then cover the `rows` scored so far. With `topk`, the scored rows' top-k lists
/// are left there (rows x k).
RankingMetrics evaluate(Device& device, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points = 0, const std::vector<float>* inv_propensity = nullptr,
                        const std::atomic<bool>* stop = nullptr,
                        std::vector<col_t>* topk = nullptr);

/// evaluate() of what `ranker` ranks (the network alone, or blended with other experts).
RankingMetrics evaluate(Ranker& ranker, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points = 0, const std::vector<float>* inv_propensity = nullptr,
                        const std::atomic<bool>* stop = nullptr,
                        std::vector<col_t>* topk = nullptr);

/// Evaluates the centre Z on the alive slot with the highest `throughput` (ties: lowest
/// slot). When `swap` is set the replica is saved, Z written in, and the replica restored
/// after. A device that fails here is removed like a failed step and the next one is tried;
/// throws Error when none is left. Runs on the chosen slot's worker thread. `topk` as for
/// evaluate().
RankingMetrics evaluate_centre(ReplicaSet& replicas, Centre& centre, bool swap,
                               const std::vector<double>& throughput, const Dataset& test, int k,
                               index_t batch_rows, index_t max_points,
                               const std::vector<float>* inv_propensity = nullptr,
                               std::vector<col_t>* topk = nullptr);

/// evaluate() of every row of `test` ranked by `indexed->topk` at the lowest level whose
/// recall on the first `indexed->exact_rows` (scored exactly first unless given in
/// `indexed->exact_topk`; the loss is theirs) reaches kMinIndexRecall, else at the level with
/// the highest recall if it reaches kUsableIndexRecall; fills `indexed`'s outputs. Returns
/// false when the device has no search (nothing filled), or when no level reaches
/// kUsableIndexRecall (`indexed->recall` and `level` filled with the best level's, the rest not
/// scored).
bool evaluate_indexed(Device& device, const Dataset& test, int k, index_t batch_rows,
                      IndexedEval* indexed, RankingMetrics* metrics,
                      const std::vector<float>* inv_propensity = nullptr,
                      const std::atomic<bool>* stop = nullptr);

/// Writes `model` (a full parameter vector) into the alive slot with the highest `throughput`
/// (its replica is overwritten: call at the end of a run) and evaluates it on the first
/// `max_points` rows of `test` (0 = all); with `indexed`, on every row through its index when
/// the device has one (evaluate_indexed(), `indexed->used`), else as without.
RankingMetrics evaluate_model(ReplicaSet& replicas, const std::vector<float>& model,
                              const std::vector<double>& throughput, const Dataset& test, int k,
                              index_t batch_rows, index_t max_points,
                              const std::vector<float>* inv_propensity,
                              const std::atomic<bool>* stop = nullptr,
                              IndexedEval* indexed = nullptr);

}  // namespace hetsgd
