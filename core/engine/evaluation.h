/// \file core/engine/evaluation.h
/// Evaluation of a model replica on a test set (core/metrics.h) and the evaluation plan of a
/// run: what the in-training evaluations and the final one cost.
///
/// Exact scoring costs 2 L h flops per row (L labels, last hidden width h): at 670,091 labels
/// and h = 128, 172 MFLOP a row, so Amazon-670K's 153,025 test rows are 26 TFLOP, more than a
/// shortlisted training epoch. In-training evaluations therefore score a sample of at most
/// kEvalFlops (at least kMinEvalRows rows), and the selected model is scored once at the end on
/// the whole test set: exactly when that costs at most kFinalEvalFlops (or with
/// TrainOptions::exact_eval), else ranked through the label index the run trained with
/// (TrainCallbacks::indexed_topk): each row's kIndexedEvalHead labels of largest bias and the
/// index's kIndexedEvalCandidates for it, scored exactly, with the index's recall@k against
/// the exact top-k measured on the in-training sample's rows first: when it is below
/// kMinIndexRecall the index is not used, and the final budget's rows are scored exactly.
/// Without an index (no hard negatives, a GPU replica), kFinalEvalFlops of it are scored exactly.
#pragma once

#include <atomic>
#include <functional>

#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/centre.h"
#include "core/engine/replica_set.h"
#include "core/engine/train_options.h"
#include "core/metrics.h"

namespace hetsgd {

/// Exact-scoring budget of one in-training evaluation of one set (about a second or two of a
/// two-core CPU): every row of bibtex, delicious or wiki10-31k, 1,000 rows at 670K labels.
inline constexpr double kEvalFlops = 1e11;
/// Fewest rows an auto-sized in-training sample has (P@1 within about +-1.5 points).
inline constexpr index_t kMinEvalRows = 1000;
/// Largest share of the training time that in-training evaluations of sampled sets take: the
/// automatic evaluation period is lengthened to keep them within it (core/engine/README.md).
inline constexpr double kEvalShare = 0.08;
/// Labels an indexed final evaluation takes from the index per row and scores exactly.
inline constexpr int kIndexedEvalCandidates = 64;
/// Labels of largest bias every row of an indexed final evaluation also scores exactly: the
/// head the index built from older weights misses most (2 x 8,192 x h flops a row, 1/82 of
/// exact scoring at 670,091 labels). On synthetic amazon-670k data after one default epoch,
/// heads of 1,024, 4,096 and 16,384 labels all gave recall@1 0.994 +- 0.001, and 64 index
/// candidates alone 0.37; the larger head is kept for data whose predictions spread further.
inline constexpr index_t kIndexedEvalHead = 8192;
/// Least recall@1 and recall@5 against exact scoring, on the in-training sample's rows, at
/// which an indexed final evaluation is used. The training's index is built from older
/// weights: after one default epoch at the amazon-670k shape it recalled 0.96 to 0.99, after
/// ten 0.27 to 0.29 (its hidden space had moved on), and metrics ranked by it would be wrong.
inline constexpr double kMinIndexRecall = 0.95;

/// Approximate top-k of a device's model through a label index (rows*k arrays, as
/// Device::predict_topk); returns false, writing nothing, when the device has no index.
using IndexedTopk = std::function<bool(Device&, const CsrBatch&, int, col_t*, float*)>;

/// An indexed evaluation's request and report (evaluate_model()).
struct IndexedEval {
  IndexedTopk topk;        ///< the search (required)
  index_t exact_rows = 0;  ///< first rows also scored exactly, for the recall
  bool used = false;       ///< out: the index ranked the rows (false: exact scoring)
  TopkRecall recall;       ///< out: recall@1..5 of the index's top-k on the exact rows (also
                           ///< when it was below kMinIndexRecall and the index not used)
  RankingMetrics exact;    ///< out: the exact metrics of those rows
};

/// Flops of exactly scoring one row of `config` (2 L h).
double scoring_flops_per_row(const ModelConfig& config);

/// Rows of a set of `rows` that an in-training evaluation uses (see eval_max_points).
index_t in_training_eval_rows(const TrainOptions& options, index_t rows, const ModelConfig& config);

/// Rows of the test set the final evaluation scores; 0 when the in-training evaluations already
/// scored all `rows` (their metrics stand).
index_t final_eval_rows(const TrainOptions& options, index_t rows, const ModelConfig& config);

/// options.inv_propensity when set, else the inverse propensities of `train` with
/// options.psp_a / psp_b, or the data set's defaults.
std::vector<float> run_propensities(const TrainOptions& options, const Dataset& train);

/// Runs `device`'s current parameters over `test` (its first `max_points` rows, 0 = all) in
/// chunks of `batch_rows`, asking for the top `k` labels (k >= 5 for the @5 metrics). Returns
/// finished means; `loss` is the row-weighted mean of predict_topk's losses. Call from the
/// thread that drives `device` (or while its worker is idle). With `inv_propensity`
/// (core/metrics.h) the propensity-scored metrics are computed too. When `stop` is or becomes
/// true the pass ends before the next chunk, so that a signal is answered within one chunk:
/// the metrics then cover the `rows` scored so far.
RankingMetrics evaluate(Device& device, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points = 0, const std::vector<float>* inv_propensity = nullptr,
                        const std::atomic<bool>* stop = nullptr);

/// Evaluates the centre Z on the alive slot with the highest `throughput` (ties: lowest
/// slot). When `swap` is set the replica is saved, Z written in, and the replica restored
/// after. A device that fails here is removed like a failed step and the next one is tried;
/// throws Error when none is left. Runs on the chosen slot's worker thread.
RankingMetrics evaluate_centre(ReplicaSet& replicas, Centre& centre, bool swap,
                               const std::vector<double>& throughput, const Dataset& test, int k,
                               index_t batch_rows, index_t max_points,
                               const std::vector<float>* inv_propensity = nullptr);

/// evaluate() of every row of `test` ranked by `indexed->topk`, the first
/// `indexed->exact_rows` (scored first) also exactly (the loss is theirs); fills `indexed`'s
/// outputs. Returns false when the device has no index (nothing filled), or when the recall
/// on the exact rows is below kMinIndexRecall (`indexed->recall` filled, the rest not scored).
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
