/// \file core/engine/pipeline.h
/// One training run as every front end runs it (`hetsgd train`, the Python package): the
/// replicas are made, trained (core/engine/trainer.h), the post-training choices made on the
/// validation rows (core/engine/calibrate.h), and the model to save assembled. The front end
/// loads the data, splits the validation rows, parses the options and saves the model: the
/// same data and options give the same model from each of them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device.h"
#include "core/engine/calibrate.h"
#include "core/engine/trainer.h"
#include "core/model/model_io.h"

namespace hetsgd {

/// What a run is: the model, how it trains, what is chosen after, and the backend that makes
/// its replicas and their communicator (kernels/replicas.h, given by the front end: core does
/// not depend on kernels).
struct RunSetup {
  ModelConfig config;
  TrainOptions options;
  CalibrationOptions calibration;
  std::function<std::vector<std::unique_ptr<Device>>()> make_devices;
  std::function<std::unique_ptr<Communicator>(const std::vector<Device*>&)> make_communicator;
};

/// What a run leaves: the trainer's result (its metrics those of `model`), the choices and the
/// model to save (empty parameters on ranks other than 0).
struct RunOutcome {
  TrainResult result;
  Calibration calibration;
  SavedModel model;
  std::string communicator;  ///< the merge's name ("host", "nccl", ...)
};

/// Seed of the order in which run_pipeline() hands a sampled test set to its evaluations.
inline constexpr std::uint64_t kTestDrawSeed = 0x7e57d2a3;

/// Makes the replicas, trains them on `data` (from `initial` when it is not empty: a tenant's
/// job ends this way after its last round, core/engine/training_job.h), then on rank 0
/// calibrates the selected model on the first device still alive and assembles the model to
/// save. A test set its evaluations sample is given to them in a seeded random order
/// (kTestDrawSeed), so that their first rows are a random draw of it. Checks the options first
/// (TrainOptions::validate(), CalibrationOptions::validate() and check_fits()), before any replica
/// is made. Throws as train() does.
RunOutcome run_pipeline(const RunSetup& setup, const TrainData& data,
                        const TrainCallbacks& callbacks = {}, TrainState initial = {});

}  // namespace hetsgd
