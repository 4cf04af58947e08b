// `hetsgd train`: train a model on one or several devices and save it.
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>

#include "apps/cli_common.h"
#include "apps/commands.h"
#include "apps/interrupt.h"
#include "apps/memory_estimate.h"
#include "apps/progress_line.h"
#include "apps/report.h"
#include "apps/run_setup.h"
#include "apps/validation_args.h"
#include "core/cluster/cluster.h"
#include "core/communicator.h"
#include "core/engine/evaluation.h"
#include "core/engine/lr_schedule.h"
#include "core/engine/pipeline.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/memory_budget.h"
#include "core/model/model_io.h"
#include "kernels/registry.h"
#include "kernels/replicas.h"

namespace hetsgd::app {
namespace {

struct TrainArgs : RunArgs {
  std::string output;
  std::string log;
  bool json = false;
};

// One line of the summary, "name        text", wrapped at words to the terminal's width with
// the continuation indented under the text.
void print_row(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void print_row(const char* fmt, ...) {
  char buf[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  std::string text(buf);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::fputs((wrap_words(text, terminal_columns(), std::string(13, ' ')) + "\n").c_str(), stdout);
}

int run_train(TrainArgs& a) {
  a.opts.validate();
  a.opts.keep_final_state = false;  // the run does not continue in this process
  // Under mpirun every rank runs this command as one node; rank 0 alone reports and writes.
  Cluster& cluster = world_cluster();
  const bool root = cluster.is_root();
  if (!root) {
    a.quiet = true;
    a.output.clear();
    a.log.clear();
  }
  // Before any work: a typo in a folder name fails now, not after the training.
  if (!a.output.empty()) check_output_path(a.output, "-o model");
  if (!a.opts.checkpoint_path.empty()) check_output_path(a.opts.checkpoint_path, "--checkpoint");
  if (!a.log.empty()) check_output_path(a.log, "--log");
  if (root) a.opts.best_model_file = best_model_file_for(a.output, a.opts.checkpoint_path);
  add_scratch_file(a.opts.best_model_file);
  add_output_temp_files(a.output);
  add_output_temp_files(a.opts.checkpoint_path);
  Progress progress(a.quiet);
  const TrainingData data = load_training_data(&a.data, a.val, a.quiet, &a.opts);
  // From here a signal stops the run: the allocation of the replicas (seconds for a model of
  // GBs) by an error that main() turns into 128 + signal, the training at a batch boundary.
  const StopOnSignal signals;
  const FrontEndRun run_setup = make_run_setup(a, data.train, signals.flag());
  const RunSetup& setup = run_setup.setup;
  const std::vector<DeviceId>& ids = run_setup.ids;
  if (!a.quiet) {
    if (cluster.size() > 1) {
      std::cerr << "hetsgd train: " << cluster.size()
                << " ranks (MPI), one node each; rank 0's devices below\n";
    }
    std::cerr << "hetsgd train: " << data.description << "; devices " << join_ids(ids)
              << (any_emulated(ids) ? " (speed EMULATED on this machine)" : "") << "; "
              << to_string(setup.options.algo) << '\n';
    const std::string notice = deterministic_notice(setup.options, ids.size());
    if (!notice.empty()) std::cerr << "hetsgd train: " << notice << '\n';
    if (data.test_is_train)
      std::cerr << "hetsgd train: no --test: metrics are on the training set\n";
    if (a.opts.target_p1 > 0.0 && !data.has_val) {
      std::cerr << "hetsgd train: --target-p1 " << a.opts.target_p1
                << " without validation data: its time is reported, training does not stop "
                   "there\n";
    }
  }
  const RunFootprint footprint = setup.options.footprint();
  if (!a.quiet) {
    // The test set may be the training set (no --test): counted once.
    const std::uint64_t loaded = dataset_bytes(data.train) + dataset_bytes(data.val) +
                                 (data.test_is_train ? 0 : dataset_bytes(data.test));
    std::cerr << "hetsgd train: memory estimate "
              << describe(estimate_replica_bytes(setup.config, ids, &footprint), loaded) << '\n';
  }

  std::ofstream log;
  if (!a.log.empty()) {
    log.open(a.log);
    if (!log) throw IoError(a.log + ": cannot open the metrics log for writing");
  }
  TrainCallbacks cb;
  // A sampled evaluation scores N rows of its set, drawn at random (seeded): the line and the
  // log say how many. The plan holds the resolved schedule (the auto epochs of the output
  // layer in use), not the flag's default.
  const EvalSampleRows eval_rows =
      eval_sample_rows(setup.options, setup.config, data.test, data.val_or_null());
  TrainOptions shown = setup.options;  // the epoch cap the trainer will follow
  const Dataset* val = data.val_or_null();
  resolve_schedule(setup.config,
                   {data.train.rows(), data.test.rows(), val ? val->rows() : 0,
                    pass_epochs(setup.options, data.train)},
                   &shown);
  const ProgressPlan plan = progress_plan(shown, eval_rows, data.test_is_train);
  const int width = terminal_columns();
  // A log that cannot be written (a full disk) does not stop the training: the model is
  // still saved, and the run then exits 1 naming the log.
  std::string log_error;
  cb.on_eval = [&](const EvalRecord& e) {
    progress.line(progress_line(e, plan, width));
    if (!log.is_open() || !log_error.empty()) return;
    errno = 0;
    log << eval_to_json(e, &eval_rows).dump() << '\n' << std::flush;
    if (!log) {
      log_error = std::string("--log '") + a.log + "': write failed" +
                  (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string());
      std::cerr << "hetsgd train: error: " << log_error << "; training goes on\n";
    }
  };
  cb.stop = signals.flag();
  cb.indexed_topk = indexed_topk;
  RunOutcome run =
      run_pipeline(setup, TrainData{&data.train, &data.test, data.val_or_null(), &cluster}, cb);
  progress.done();
  if (!root) return signals.exit_code(0);
  const TrainResult& result = run.result;
  const Calibration& calib = run.calibration;
  // The selected model with its choices: the best validation evaluation's (keep-best), else
  // the last.
  if (!a.output.empty()) save_model(a.output, run.model);
  nlohmann::json j = result_to_json(result, data.test.rows());
  j["command"] = "train";
  j["data"] = data.description;
  j["devices_arg"] = join_ids(ids);
  // Any rank's emulated device makes the whole run's speeds emulated.
  bool emulated = any_emulated(ids);
  for (const DeviceSummary& d : result.devices) emulated = emulated || d.id.emulated();
  j["emulated"] = emulated;
  j["communicator"] = cluster.size() > 1 ? "mpi+" + run.communicator : run.communicator;
  j["model"] = a.output;
  j.update(calibration_to_json(calib));
  if (a.json) {
    std::cout << j.dump() << '\n';
  } else {
    print_row("%-12s %s\n", "data", data.description.c_str());
    print_row("%-12s %s%s (%s merge)\n", "devices", join_ids(ids).c_str(),
              emulated ? "  [speed emulated]" : "", run.communicator.c_str());
    if (result.ranks > 1) {
      print_row("%-12s %d (MPI), node centres merged by a weighted all-reduce\n", "ranks",
                result.ranks);
    }
    print_row("%-12s %s, stopped by %s after %.2f epochs, %lld rounds\n", "algorithm",
              to_string(result.algo), to_string(result.stop), result.epochs,
              static_cast<long long>(result.rounds_done));
    print_row("%-12s %.2f s training (%.2f s merging), %.2f s evaluation, %.0f samples/s\n", "time",
              result.train_seconds, result.merge_seconds, result.eval_seconds,
              result.samples_per_second());
    if (result.has_val) {
      print_row("%-12s %s  (selected model: round %lld)\n", "validation",
                format_ranking(result.val_metrics).c_str(),
                static_cast<long long>(result.selected_round));
    }
    if (calib.forest_weight > 0.0) {
      print_row(
          "%-12s weight %g, %d trees on %lld rows grown in %.2f s (labels ranked by "
          "softmax^(1-W) (forest + 0.003)^W)\n",
          "forest", calib.forest_weight, calib.forest_trees,
          static_cast<long long>(calib.forest_rows), calib.forest_seconds);
    } else if (!calib.forest_skipped.empty()) {
      print_row("%-12s none kept: %s\n", "forest", calib.forest_skipped.c_str());
    }
    if (calib.linear_weight > 0.0) {
      print_row(
          "%-12s weight %g, %lld weights of %lld classifiers trained in %.2f s%s (labels "
          "ranked by blend^(1-U) sigmoid(score)^U)\n",
          "linear", calib.linear_weight, static_cast<long long>(calib.linear_weights),
          static_cast<long long>(calib.linear->num_labels()), calib.linear_seconds,
          calib.linear_shortlist > 0 ? ", each on the rows its forest shortlists" : "");
    } else if (!calib.linear_skipped.empty()) {
      print_row("%-12s none kept: %s\n", "linear", calib.linear_skipped.c_str());
    }
    if (calib.refit) {
      print_row(
          "%-12s the kept experts were trained again on the training and validation rows: "
          "the validation metrics above are of the model before\n",
          "refit");
    }
    if (calib.tail_weight > 0.0) {
      print_row("%-12s %g (labels ranked with W ln(1/propensity) added)\n", "tail weight",
                calib.tail_weight);
    }
    print_row("%-12s %s\n", "test", format_ranking(result.final_metrics).c_str());
    if (result.final_indexed) {
      print_row(
          "%-12s ranked through label clusters (search level %d): recall@1/3/5 against exact "
          "%.3f / %.3f / %.3f on %lld rows drawn at random (--exact-eval: exact)\n",
          "", result.index_level, result.index_recall.at_k(1), result.index_recall.at_k(3),
          result.index_recall.at_k(5), static_cast<long long>(result.index_recall.rows));
      if (std::min(result.index_recall.at_k(1), result.index_recall.at_k(5)) < kMinIndexRecall) {
        // Below the bound the ranked metrics are biased low: the exact ones of those rows too.
        print_row("%-12s exact on those rows: %s\n", "",
                  format_ranking(result.exact_sample).c_str());
      }
    } else if (result.final_eval_rows < data.test.rows()) {
      print_row(
          "%-12s test metrics over %lld of the %lld rows, drawn at random (--exact-eval: "
          "all)\n",
          "", static_cast<long long>(result.final_eval_rows),
          static_cast<long long>(data.test.rows()));
      const double recalled = std::min(result.index_recall.at_k(1), result.index_recall.at_k(5));
      if (result.index_recall.rows > 0 && recalled < kUsableIndexRecall) {
        print_row(
            "%-12s label clusters were not used: their recall@1/5 against exact, %.3f / "
            "%.3f on %lld rows drawn at random, is below %.2f\n",
            "", result.index_recall.at_k(1), result.index_recall.at_k(5),
            static_cast<long long>(result.index_recall.rows), kUsableIndexRecall);
      } else if (result.index_recall.rows > 0 && calib.forest != nullptr) {
        print_row(
            "%-12s label clusters were not used: they rank the network's scores, not "
            "their blend with the label forest\n",
            "");
      }
    }
    for (const DeviceSummary& d : result.devices) {
      const std::string where =
          result.ranks > 1 ? "rank " + std::to_string(d.rank) + " " + d.name : d.name;
      print_row("%-12s %s: %lld updates, %lld samples, batch %lld%s%s\n", "device", where.c_str(),
                static_cast<long long>(d.updates), static_cast<long long>(d.samples),
                static_cast<long long>(d.batch_size),
                d.alive ? "" : ", FAILED: ", d.failure.c_str());
    }
    if (!a.output.empty()) print_row("%-12s %s\n", "model", a.output.c_str());
  }
  if (log.is_open() && log_error.empty()) {
    // The records above are the network's curve before calibration, often on a sample of the
    // rows; the last one is the saved model's, as reported above.
    log << final_log_record(j).dump() << '\n';
    log.close();
    if (!log) log_error = "--log '" + a.log + "': write failed at the final record";
  }
  if (!log_error.empty()) throw IoError(log_error + " (the model was saved)");
  // A full disk behind stdout (--json > file) is an error, not a silent truncation.
  check_stream_written(std::cout, "stdout");
  return signals.exit_code(0);
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a model (Adaptive SGD or a baseline)");
  add_run_options(cmd, a.get(), "cpu");
  cmd->add_option("-o,--output", a->output, "save the trained model here");
  cmd->add_option("--log", a->log,
                  "write one JSON line per in-training evaluation (the network's curve, rows "
                  "said), then one of the saved model's final metrics");
  cmd->add_flag("--json", a->json, "print the result as one JSON record on stdout");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  return [a] { return run_train(*a); };
}

}  // namespace hetsgd::app
