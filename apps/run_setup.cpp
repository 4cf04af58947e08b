#include "apps/run_setup.h"

#include "kernels/registry.h"

namespace hetsgd::app {

void add_run_options(CLI::App* cmd, RunArgs* args, const std::string& default_devices) {
  add_data_options(cmd, &args->data, "delicious");
  add_model_options(cmd, &args->model);
  add_device_options(cmd, &args->devices, default_devices);
  add_train_options(cmd, &args->opts);
  add_validation_options(cmd, &args->val);
  add_calibration_options(cmd, &args->calibration);
}

RunSetup make_run_plan(const ModelArgs& model, const TrainOptions& options,
                       const CalibrationArgs& calibration, const Dataset& train, int threads,
                       bool announce) {
  RunSetup s;
  s.config = make_model_config(model, train, options.deterministic);
  s.options = options;
  s.calibration = calibration.options(threads, announce);
  s.calibration.check_fits(s.config);
  return s;
}

FrontEndRun make_run_setup(const ModelArgs& model, const DeviceArgs& devices,
                           const TrainOptions& options, const CalibrationArgs& calibration,
                           const Dataset& train, bool announce, const std::atomic<bool>* stop) {
  FrontEndRun run;
  run.setup = make_run_plan(model, options, calibration, train, devices.threads, announce);
  RunSetup& s = run.setup;
  auto [ids, dev_opts] = resolve_device_args(devices);
  run.ids = ids;
  // The lambda owns copies: the setup outlives this call.
  s.make_devices = [ids = ids, dev_opts = dev_opts, fault = devices.inject_fault, config = s.config,
                    opts = s.options,
                    stop] { return make_devices(ids, config, dev_opts, fault, &opts, stop); };
  s.make_communicator = [](const std::vector<Device*>& d) { return make_communicator(d); };
  return run;
}

FrontEndRun make_run_setup(const RunArgs& args, const Dataset& train,
                           const std::atomic<bool>* stop) {
  return make_run_setup(args.model, args.devices, args.opts, args.calibration, train, !args.quiet,
                        stop);
}

}  // namespace hetsgd::app
