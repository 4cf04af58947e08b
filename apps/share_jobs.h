/// \file apps/share_jobs.h
/// The tenants' training jobs of `hetsgd share --run`: each made from its jobs-file entry as
/// `hetsgd train` makes a run (apps/run_setup.h: data, validation split, model, schedule,
/// choices), trained round by round on the devices it holds (core/engine/training_job.h) and,
/// when the share ends, ended as `train` ends a run (TrainingJob::finish).
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "core/engine/calibrate.h"
#include "core/engine/training_job.h"
#include "core/tenancy/jobs_file.h"
#include "core/tenancy/share_runner.h"

namespace hetsgd::app {

/// A tenant's training job, kept between rounds (core/engine/training_job.h), the lock that
/// serialises its rounds, the devices it last held and where its model goes.
struct TenantJob {
  std::unique_ptr<TrainingJob> job;
  std::mutex mutex;
  std::vector<DeviceId> last_held;
  std::string output;  ///< the job's "output" ("" = not saved)
};

/// Tenant `index`'s job of the jobs file `file` (its options parsed by apps/job_options.h),
/// with its data loaded (`quiet`: no format notice) and the forest growing on `threads`.
std::unique_ptr<TenantJob> make_job(const tenancy::TenantSpec& t, int index,
                                    const std::string& file, bool quiet, int threads);

/// Replicas made on the devices a job holds (memory checked first), `threads` per CPU device.
DeviceMaker device_maker(int threads);

/// Trains `job` on `held` for `seconds`, continuing its state (cursor, optimiser, batch sizes).
tenancy::TenantRound run_job_round(TenantJob& job, const std::vector<DeviceId>& held,
                                   double seconds, int threads);

/// Samples/s of `job` on one device `id`, from a short real run.
double profile_job(TenantJob& tenant, const DeviceId& id, int threads);

/// A job's end: its model's record (TrainingJob::finish), or why it has none.
struct FinishedJob {
  std::string tenant;
  std::string output;  ///< where the model was saved ("" = not asked)
  std::string error;   ///< what() of the failure ("" = ended fine)
  TrainResult result;
  Calibration calibration;
  index_t test_rows = 0;
};

/// Ends every job that trained and did not fail (`r`), one after another, as `hetsgd train`
/// ends a run: the model selected on its validation rows, calibrated, its test metrics; saved
/// where the job says. A job that cannot end is recorded with its error; the others still end.
/// `stop` ends a forest growth early.
std::vector<FinishedJob> finish_jobs(std::vector<std::unique_ptr<TenantJob>>& jobs,
                                     const tenancy::JobsFile& file,
                                     const tenancy::EnforcementResult& r, int threads, bool quiet,
                                     const std::atomic<bool>* stop);

/// One record per ended job: result_to_json() and calibration_to_json() (apps/report.h,
/// apps/calibration_flags.h), its tenant, model file and error.
nlohmann::json finished_json(const std::vector<FinishedJob>& jobs);

/// One line per ended job: its test metrics, choices and model file.
void print_finished(const std::vector<FinishedJob>& jobs, std::ostream& os);

}  // namespace hetsgd::app
