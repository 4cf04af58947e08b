/// \file apps/report.h
/// Turning training results into the command line's JSON outputs: JSONL curves and JSON
/// records (the progress line is apps/progress_line.h, the tables compare_report.h and
/// share_tables.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/engine/trainer.h"
#include "core/metrics.h"

namespace hetsgd::app {

/// One evaluation as a JSON object (time, epoch, loss, P@k, nDCG@k, per-device counters).
nlohmann::json eval_to_json(const EvalRecord& e);
/// P@1..5 and nDCG@1..5 as a JSON object.
nlohmann::json metrics_to_json(const RankingMetrics& m);
/// The summary of a finished run as one JSON object. `test_rows` (when known) lets `final_eval`
/// say "exact_first_rows" where the final metrics are exact over only the first
/// `final_eval_rows` rows of the test set.
nlohmann::json result_to_json(const TrainResult& r, index_t test_rows = 0);

}  // namespace hetsgd::app
