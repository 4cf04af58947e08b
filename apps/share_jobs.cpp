#include "apps/share_jobs.h"

#include <chrono>
#include <iostream>
#include <optional>
#include <utility>

#include "apps/calibration_flags.h"
#include "apps/job_options.h"
#include "apps/report.h"
#include "apps/run_setup.h"
#include "apps/validation_args.h"
#include "core/metrics.h"
#include "core/model/model_io.h"
#include "kernels/registry.h"
#include "kernels/replicas.h"

namespace hetsgd::app {

std::unique_ptr<TenantJob> make_job(const tenancy::TenantSpec& t, int index,
                                    const std::string& file, bool quiet, int threads) {
  JobArgs ja = parse_job_options(t, index, file);
  // The data, validation split, model, schedule and choices of `hetsgd train`, so that a job
  // ends with the model `train` would save from the same data and options.
  TrainingData data = load_training_data(&ja.data, ja.val, quiet, &ja.train);
  const RunSetup plan =
      make_run_plan(ja.model, ja.train, ja.calibration, data.train, threads, /*announce=*/false);
  auto out = std::make_unique<TenantJob>();
  out->output = ja.output;
  out->job = std::make_unique<TrainingJob>(
      std::move(data.train), std::move(data.test), plan.config, plan.options,
      data.has_val ? std::move(data.val) : Dataset{}, plan.calibration);
  return out;
}

DeviceMaker device_maker(int threads) {
  hetsgd::DeviceOptions dopts;
  dopts.threads = threads;
  return [dopts](const std::vector<DeviceId>& ids, const ModelConfig& config,
                 const TrainOptions& run) {
    const RunFootprint footprint = run.footprint();
    return make_replicas(ids, config, dopts, {}, &footprint);
  };
}

tenancy::TenantRound run_job_round(TenantJob& job, const std::vector<DeviceId>& held,
                                   double seconds, int threads) {
  std::lock_guard<std::mutex> lock(job.mutex);
  job.last_held = held;
  const DeviceMaker maker = device_maker(threads);
  const CommunicatorFactory comm = [](const std::vector<Device*>& d) {
    return make_communicator(d);
  };
  const JobRound r = job.job->run_for(seconds, held, maker, comm);
  tenancy::TenantRound out;
  out.samples = static_cast<double>(r.samples);
  out.updates = static_cast<long long>(r.updates);
  out.seconds = r.train_seconds;
  out.done = r.finished;
  return out;
}

double profile_job(TenantJob& tenant, const DeviceId& id, int threads) {
  const TrainingJob& job = *tenant.job;
  hetsgd::DeviceOptions dopts;
  dopts.threads = threads;
  std::unique_ptr<Device> dev = std::move(make_replicas({id}, job.config(), dopts).front());
  CsrBatch batch;
  const index_t b = std::min<index_t>(job.options().b0, job.train_set().rows());
  slice_rows(job.train_set(), 0, b, &batch);
  dev->train_step(batch, 0.0f);  // warm caches and allocations
  const auto t0 = std::chrono::steady_clock::now();
  index_t samples = 0;
  double elapsed = 0.0;
  while (elapsed < 0.3 || samples < 4 * b) {
    dev->train_step(batch, 0.0f);
    samples += b;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(samples) / elapsed;
}

std::vector<FinishedJob> finish_jobs(std::vector<std::unique_ptr<TenantJob>>& jobs,
                                     const tenancy::JobsFile& file,
                                     const tenancy::EnforcementResult& r, int threads, bool quiet,
                                     const std::atomic<bool>* stop) {
  std::vector<FinishedJob> out;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i] || jobs[i]->last_held.empty() || r.failed_round[i] >= 0) continue;
    TenantJob& t = *jobs[i];
    FinishedJob f;
    f.tenant = file.tenants[i].name;
    f.output = t.output;
    f.test_rows = t.job->test_set().rows();
    if (!quiet) {
      std::cerr << "hetsgd share: tenant '" << f.tenant
                << "': choosing its model on its validation rows, as train does\n";
    }
    try {
      TrainCallbacks cb;
      cb.stop = stop;
      cb.indexed_topk = indexed_topk;
      std::optional<RunOutcome> run = t.job->finish(t.last_held.front(), device_maker(threads), cb);
      if (!run) continue;
      if (!t.output.empty()) save_model(t.output, run->model);
      f.result = std::move(run->result);
      f.calibration = std::move(run->calibration);
    } catch (const std::exception& e) {
      f.error = e.what();
    }
    out.push_back(std::move(f));
  }
  return out;
}

nlohmann::json finished_json(const std::vector<FinishedJob>& jobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const FinishedJob& f : jobs) {
    nlohmann::json j = nlohmann::json::object();
    if (f.error.empty()) {
      j = result_to_json(f.result, f.test_rows);
      j.update(calibration_to_json(f.calibration));
    }
    j["tenant"] = f.tenant;
    j["model"] = f.output;
    j["error"] = f.error;
    out.push_back(std::move(j));
  }
  return out;
}

void print_finished(const std::vector<FinishedJob>& jobs, std::ostream& os) {
  if (jobs.empty()) return;
  os << "models (each job's, chosen and calibrated on its validation rows as train does):\n";
  for (const FinishedJob& f : jobs) {
    os << "  " << f.tenant << ": ";
    if (!f.error.empty()) {
      os << "FAILED: " << f.error << '\n';
      continue;
    }
    os << "test " << format_ranking(f.result.final_metrics);
    if (f.result.final_eval_rows < f.test_rows) {
      os << " (" << f.result.final_eval_rows << " of " << f.test_rows << " rows, drawn)";
    }
    if (f.result.has_val) os << "; selected round " << f.result.selected_round;
    if (f.calibration.forest_weight > 0.0) os << "; forest " << f.calibration.forest_weight;
    if (f.calibration.tail_weight > 0.0) os << "; tail weight " << f.calibration.tail_weight;
    if (!f.output.empty()) os << "; saved to " << f.output;
    os << '\n';
  }
}

}  // namespace hetsgd::app
