// `hetsgd train`: train a model on one or several devices and save it.
#include <fstream>
#include <iostream>
#include <memory>

#include "apps/cli_common.h"
#include "apps/commands.h"
#include "apps/report.h"
#include "core/communicator.h"
#include "core/error.h"
#include "core/model_io.h"
#include "kernels/registry.h"

namespace hetsgd::app {
namespace {

struct TrainArgs {
  DataArgs data;
  ModelArgs model;
  DeviceArgs devices;
  TrainOptions opts;
  std::string output;
  std::string log;
  bool json = false;
  bool quiet = false;
};

int run_train(TrainArgs& a) {
  a.opts.validate();
  Progress progress(a.quiet);
  LoadedData data = load_data(a.data);
  const ModelConfig config = make_model_config(a.model, data.train);
  auto [ids, dev_opts] = resolve_device_args(a.devices);
  if (!a.quiet) {
    std::cerr << "hetsgd train: " << data.description << "; devices " << join_ids(ids)
              << (any_emulated(ids) ? " (speed EMULATED on this machine)" : "") << "; "
              << to_string(a.opts.algo) << '\n';
    if (data.test_is_train)
      std::cerr << "hetsgd train: no --test: metrics are on the training set\n";
  }
  std::vector<std::unique_ptr<Device>> devices =
      make_devices(ids, config, dev_opts, a.devices.inject_fault);
  std::vector<Device*> raw;
  for (auto& d : devices) raw.push_back(d.get());
  std::unique_ptr<Communicator> comm = make_communicator(raw);

  std::ofstream log;
  if (!a.log.empty()) {
    log.open(a.log);
    if (!log) throw IoError(a.log + ": cannot open the metrics log for writing");
  }
  TrainCallbacks cb;
  const double total_epochs = a.opts.max_epochs;
  cb.on_eval = [&](const EvalRecord& e) {
    progress.line(eval_progress_line(e, total_epochs));
    if (log.is_open()) log << eval_to_json(e).dump() << '\n' << std::flush;
  };
  TrainResult result = train(devices, *comm, data.train, data.test, a.opts, cb);
  progress.done();

  if (!a.output.empty()) {
    SavedModel m{config, result.centre};
    save_model(a.output, m);
  }
  nlohmann::json j = result_to_json(result);
  j["command"] = "train";
  j["data"] = data.description;
  j["devices_arg"] = join_ids(ids);
  j["emulated"] = any_emulated(ids);
  j["communicator"] = comm->name();
  j["model"] = a.output;
  if (a.json) {
    std::cout << j.dump() << '\n';
  } else {
    std::printf("%-12s %s\n", "data", data.description.c_str());
    std::printf("%-12s %s%s (%s merge)\n", "devices", join_ids(ids).c_str(),
                any_emulated(ids) ? "  [speed emulated]" : "", comm->name());
    std::printf("%-12s %s, stopped by %s after %.2f epochs, %lld rounds\n", "algorithm",
                to_string(result.algo), to_string(result.stop), result.epochs,
                static_cast<long long>(result.rounds_done));
    std::printf("%-12s %.2f s training (%.2f s merging), %.2f s evaluation, %.0f samples/s\n",
                "time", result.train_seconds, result.merge_seconds, result.eval_seconds,
                result.samples_per_second());
    std::printf("%-12s %s\n", "test", format_ranking(result.final_metrics).c_str());
    for (const DeviceSummary& d : result.devices) {
      std::printf("%-12s %s: %lld updates, %lld samples, batch %lld%s%s\n", "device",
                  d.name.c_str(), static_cast<long long>(d.updates),
                  static_cast<long long>(d.samples), static_cast<long long>(d.batch_size),
                  d.alive ? "" : ", FAILED: ", d.failure.c_str());
    }
    if (!a.output.empty()) std::printf("%-12s %s\n", "model", a.output.c_str());
  }
  return 0;
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a model (Adaptive SGD or a baseline)");
  add_data_options(cmd, &a->data, "delicious");
  add_model_options(cmd, &a->model);
  add_device_options(cmd, &a->devices, "cpu");
  add_train_options(cmd, &a->opts);
  cmd->add_option("-o,--output", a->output, "save the trained model here");
  cmd->add_option("--log", a->log, "write one JSON line per evaluation (the metrics curve)");
  cmd->add_flag("--json", a->json, "print the result as one JSON record on stdout");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  return [a] { return run_train(*a); };
}

}  // namespace hetsgd::app
