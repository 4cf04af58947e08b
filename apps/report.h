/// \file apps/report.h
/// Turning training results into the command line's JSON outputs: JSONL curves and JSON
/// records (the progress line is apps/progress_line.h, the tables compare_report.h and
/// share_tables.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "apps/progress_line.h"
#include "core/engine/trainer.h"
#include "core/metrics.h"

namespace hetsgd::app {

/// One evaluation as a JSON object (time, epoch, loss, P@k, nDCG@k, per-device counters). With
/// `rows` (a `train --log` record) it also says what it is, `"record": "in_training"` (the
/// network before calibration), and the rows it scored: `test_rows`, `val_rows` (with
/// validation data) and `sampled`, true when either is only a drawn sample of its set.
nlohmann::json eval_to_json(const EvalRecord& e, const EvalSampleRows* rows = nullptr);
/// P@1..5 and nDCG@1..5 as a JSON object.
nlohmann::json metrics_to_json(const RankingMetrics& m);
/// The summary of a finished run as one JSON object. `test_rows` (when known) lets `final_eval`
/// say "exact_drawn_rows" where the final metrics are exact over only `final_eval_rows` rows
/// of the test set, drawn at random (run_pipeline's seeded order).
nlohmann::json result_to_json(const TrainResult& r, index_t test_rows = 0);
/// The last record of `train --log`, `"record": "final"`: the saved model's metrics as
/// `summary` (the run's `--json` record: result_to_json() with the calibration's fields) reports
/// them, after calibration: the test metrics with `final_eval` and `final_eval_rows`, the
/// validation block `val`, the selected round and the model's file.
nlohmann::json final_log_record(const nlohmann::json& summary);

}  // namespace hetsgd::app
