/// \file apps/train_flags.h
/// Every TrainOptions knob as a `--flag`, defined once and used by `train`, `compare`, the
/// config file and the jobs file of `share` alike (enumerations bound directly, numbers
/// range-checked at parse time, so every bad value is a usage error naming the option).
#pragma once

#include <CLI/CLI.hpp>

#include "core/engine/train_options.h"
#include "core/model_config.h"

namespace hetsgd::app {

/// Which schedule options the user set (command line, --config file or jobs file): the
/// automatic schedule changes only the others.
struct ScheduleGiven {
  bool epochs = false;
  bool patience = false;
};

/// Adds the training options to `cmd`, bound to `opts` (defaults shown in --help); with
/// `given`, records which schedule options were set.
void add_train_options(CLI::App* cmd, TrainOptions* opts, ScheduleGiven* given = nullptr);

/// Samples the middle range's auto schedule trains at most: more rows get fewer epochs (at least
/// kMidRangeMinEpochs), so that a run's time stops growing with its rows past about 370,000 of
/// them (at the amazoncat-13k shape, 1.19 million rows, 8 epochs would take well over an hour on
/// two cores; apps/DEFAULTS.md).
inline constexpr double kMidRangeSamples = 3.0e6;
inline constexpr double kMidRangeMinEpochs = 1.0;

/// Epochs of the middle range's auto schedule for `train_rows` training rows (0 = unknown: 8):
/// 8, or kMidRangeSamples / train_rows where that is fewer, at least kMidRangeMinEpochs.
double mid_range_epochs(index_t train_rows);

/// What `auto` adds to TrainOptions' schedule (lr 4e-3 without warm-up, decayed by lr / (1 +
/// 0.5 epochs), the library's and the command line's alike) for the model `config`
/// (apps/DEFAULTS.md), each part unless `given` says otherwise: where the run's length is the
/// library's default (no epochs, rounds or time budget set), patience kAutoPatience (8
/// evaluations where there is validation data) and, for a shortlisted output layer of at most
/// 100,000 labels, mid_range_epochs(train_rows) epochs. A library caller who wants them calls it.
void apply_auto_schedule(const ModelConfig& config, const ScheduleGiven& given, index_t train_rows,
                         TrainOptions* opts);

}  // namespace hetsgd::app
