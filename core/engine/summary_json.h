/// \file core/engine/summary_json.h
/// DeviceSummary as JSON (nlohmann's to_json / from_json, found by argument lookup): one
/// encoding for the summaries ranks exchange (node_run.cpp) and the run report (apps/report).
/// The rank is not encoded: the receiver knows whose summary it reads.
#pragma once

#include <nlohmann/json.hpp>

#include "core/engine/train_result.h"

namespace hetsgd {

void to_json(nlohmann::json& j, const DeviceSummary& d);
void from_json(const nlohmann::json& j, DeviceSummary& d);

}  // namespace hetsgd
