#include "core/engine/training_job.h"

#include <algorithm>
#include <utility>

#include "core/engine/evaluation.h"
#include "core/error.h"

namespace hetsgd {
namespace {

// Optimiser steps over every device slot the job has had.
index_t total_updates(const TrainState& state) {
  index_t sum = 0;
  for (const SlotState& slot : state.slots) sum += slot.updates;
  return sum;
}

}  // namespace

TrainingJob::TrainingJob(Dataset train, Dataset test, ModelConfig config, TrainOptions options,
                         Dataset val, CalibrationOptions calibration)
    : train_(std::move(train)),
      test_(std::move(test)),
      val_(std::move(val)),
      config_(std::move(config)),
      options_(std::move(options)),
      calibration_(std::move(calibration)) {
  // Its in-training evaluations score the first rows of the test set: in a seeded order they
  // are a random draw of it, as run_pipeline() hands them over (core/engine/pipeline.h).
  if (in_training_test_rows(options_, test_.rows(), val_.rows(), config_) < test_.rows()) {
    test_ = draw_rows(test_, kTestDrawSeed);
  }
  // The job's time comes round by round from the share; files belong to the caller.
  options_.time_budget_s = 0.0;
  options_.checkpoint_path.clear();
  options_.resume_path.clear();
}

JobRound TrainingJob::run_for(double seconds, const std::vector<DeviceId>& ids,
                              const DeviceMaker& make_device,
                              const CommunicatorFactory& make_comm) {
  JobRound out;
  out.finished = finished_;
  if (finished_ || ids.empty() || seconds <= 0.0) return out;
  HETSGD_CHECK(make_device != nullptr, "TrainingJob::run_for: no device factory");
  std::vector<std::unique_ptr<Device>> devices = make_device(ids, config_, options_);
  std::vector<Device*> raw;
  for (auto& d : devices) raw.push_back(d.get());
  std::unique_ptr<Communicator> comm = make_comm ? make_comm(raw) : make_host_communicator();

  // The budget counts the whole job's training time, so this call adds `seconds` to it; the
  // job's own limits (epochs, rounds) still apply and end it.
  TrainOptions o = options_;
  o.time_budget_s = state_.train_seconds + seconds;
  if (!state_.empty()) o.eval_at_start = false;
  const double before_s = state_.train_seconds;
  const index_t before_points = state_.cursor.consumed;
  const index_t before_updates = total_updates(state_);
  TrainCallbacks callbacks;
  callbacks.stop = stop_;
  TrainResult r = train(raw, *comm, data(), o, state_, callbacks);
  state_ = std::move(r.state);
  out.samples = r.samples - before_points;
  // Slots are matched by device id; one that is not carried over must not count negative.
  out.updates = std::max<index_t>(0, total_updates(state_) - before_updates);
  out.train_seconds = r.train_seconds - before_s;
  out.devices = static_cast<int>(ids.size());
  out.evals = r.evals;
  evals_.insert(evals_.end(), r.evals.begin(), r.evals.end());
  finished_ = r.stop == StopReason::kMaxEpochs || r.stop == StopReason::kMaxRounds ||
              r.stop == StopReason::kTarget || r.stop == StopReason::kNoImprovement;
  out.finished = finished_;
  return out;
}

TrainData TrainingJob::data() const {
  return TrainData{&train_, &test_, val_.rows() > 0 ? &val_ : nullptr};
}

std::optional<RunOutcome> TrainingJob::finish(const DeviceId& device,
                                              const DeviceMaker& make_device,
                                              const TrainCallbacks& callbacks) {
  if (state_.empty()) return std::nullopt;
  HETSGD_CHECK(make_device != nullptr, "TrainingJob::finish: no device factory");
  RunSetup setup;
  setup.config = config_;
  setup.options = options_;
  // The budget is spent: the run restores the state, evaluates what the last round left
  // (selection sees it, as at the end of `train`) and hands over to the calibration.
  setup.options.time_budget_s = state_.train_seconds;
  setup.options.eval_at_start = false;
  // Nothing continues after it: the run returns the selected model, not the whole state.
  setup.options.keep_final_state = false;
  setup.calibration = calibration_;
  setup.make_devices = [&] { return make_device({device}, config_, setup.options); };
  setup.make_communicator = [](const std::vector<Device*>&) { return make_host_communicator(); };
  return run_pipeline(setup, data(), callbacks, state_);
}

}  // namespace hetsgd
