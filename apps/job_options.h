/// \file apps/job_options.h
/// A tenant's job options from a jobs file, parsed by the very option definitions of
/// `hetsgd train` (data, model and training flags): `"epochs": 5` means `--epochs=5`,
/// `"batch_policy": "fixed"` means `--batch-policy=fixed`. An unknown key or a bad value is an
/// error naming the file, the key and its JSON path.
#pragma once

#include <string>

#include "apps/calibration_flags.h"
#include "apps/cli_common.h"
#include "apps/validation_args.h"
#include "core/engine/train_options.h"
#include "core/tenancy/jobs_file.h"

namespace hetsgd::app {

/// Everything a tenant's training job is made of.
struct JobArgs {
  DataArgs data;       ///< from "data" ("synthetic:<preset>" or a path) and --test/--scale
  ModelArgs model;     ///< "hidden", and --loss/--optimizer/... keys
  TrainOptions train;  ///< "algorithm" and every training key
  ValArgs val;         ///< "val", "val_fraction", "val_seed": the rows its model is chosen on
  CalibrationArgs calibration;  ///< "forest", "tail_weight", ...: the choices after training
  std::string output;           ///< "output": where the finished job's model is saved ("" = not)
};

/// Parses tenant `index` of `file` (for messages). Defaults a share job differs in from
/// `train`: synthetic data at a quarter of the preset's rows, no epoch limit (the job runs while
/// the share runs) unless "epochs" is given, no evaluation at time 0, and in-training
/// evaluations on at most 1000 rows. The validation split and the choices after training
/// ("forest", "tail_weight", ...) are `train`'s, made when the share ends; "output" saves the
/// model then. Options a shared job cannot honour (resume, checkpoint, checkpoint_every,
/// time_budget) are refused. Throws InvalidArgument "<file>: <json path>: ...".
JobArgs parse_job_options(const tenancy::TenantSpec& tenant, int index, const std::string& file);

}  // namespace hetsgd::app
