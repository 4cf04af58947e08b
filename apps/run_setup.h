/// \file apps/run_setup.h
/// The options of `hetsgd train` and `compare` (and of the Python package's train()) turned into
/// the library's RunSetup (core/engine/pipeline.h): both front ends build their run here, so the
/// same options give the same model.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "apps/calibration_flags.h"
#include "apps/cli_common.h"
#include "apps/train_flags.h"
#include "apps/validation_args.h"
#include "core/engine/pipeline.h"

namespace hetsgd::app {

/// The options a training run is made of, which `train` and `compare` share.
struct RunArgs {
  DataArgs data;
  ValArgs val;
  ModelArgs model;
  DeviceArgs devices;
  TrainOptions opts;
  CalibrationArgs calibration;  ///< --forest, --tail-weight, ... (apps/calibration_flags.h)
  bool quiet = false;
};

/// Adds the options of `args` to `cmd`: the data (preset "delicious" by default), model,
/// devices (`default_devices`), training schedule, validation and calibration options.
void add_run_options(CLI::App* cmd, RunArgs* args, const std::string& default_devices);

/// A RunSetup and the devices it makes its replicas on.
struct FrontEndRun {
  RunSetup setup;
  std::vector<DeviceId> ids;
};

/// The model config for `train` (the training rows, validation rows removed), the options
/// (their auto schedule is resolved by the trainer, resolve_schedule()) and the calibration options
/// (checked against the model now, not after the training; the forest grows on `threads`), without
/// a backend: a share's job makes its replicas round by round on the devices it holds. `announce`:
/// forest growths are said on stderr.
RunSetup make_run_plan(const ModelArgs& model, const TrainOptions& options,
                       const CalibrationArgs& calibration, const Dataset& train, int threads,
                       bool announce);

/// make_run_plan() and the backend making replicas on `devices` (memory checked first; `stop`
/// abandons the allocation).
FrontEndRun make_run_setup(const ModelArgs& model, const DeviceArgs& devices,
                           const TrainOptions& options, const CalibrationArgs& calibration,
                           const Dataset& train, bool announce,
                           const std::atomic<bool>* stop = nullptr);

/// make_run_setup() of `args`' options for `train`, announcing forest growths unless quiet.
FrontEndRun make_run_setup(const RunArgs& args, const Dataset& train,
                           const std::atomic<bool>* stop);

}  // namespace hetsgd::app
