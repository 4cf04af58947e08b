/// \file apps/train_flags.h
/// Every TrainOptions knob as a `--flag`, defined once and used by `train`, `compare`, the
/// config file and the jobs file of `share` alike (enumerations bound directly, numbers
/// range-checked at parse time, so every bad value is a usage error naming the option).
#pragma once

#include <CLI/CLI.hpp>

#include "core/engine/train_options.h"
#include "core/model_config.h"

namespace hetsgd::app {

/// Adds the training options to `cmd`, bound to `opts` (defaults shown in --help; the auto
/// schedule's values are resolve_schedule()'s, core/engine/train_options.h).
void add_train_options(CLI::App* cmd, TrainOptions* opts);

}  // namespace hetsgd::app
