/// \file apps/report.h
/// Turning training results into the command line's outputs: JSONL curves, JSON records,
/// and human tables.
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
/// The summary of a finished run as one JSON object.
nlohmann::json result_to_json(const TrainResult& r);
/// One progress line for an evaluation.
std::string eval_progress_line(const EvalRecord& e, double total_epochs);

}  // namespace hetsgd::app
