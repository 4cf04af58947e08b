/// \file core/engine/run_checks.h
/// Checks the run loop makes before and during a run: data shapes against the model, and the
/// numerical health of the centre (a NaN or Inf parameter stops the run).
#pragma once

#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/types.h"

namespace hetsgd {

/// Throws InvalidArgument when `train` or `eval` (a test or validation set) does not fit
/// `config` (no rows, more features, another label count).
void check_shapes(const ModelConfig& config, const Dataset& train, const Dataset& eval);

/// Index of the first NaN or infinite entry of `v`, or -1 when every entry is finite.
index_t first_non_finite(const std::vector<float>& v);

}  // namespace hetsgd
