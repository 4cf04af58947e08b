// `hetsgd compare`: several algorithms one after another on the same data, devices, model and
// time budget; a table, the curves (CSV + JSONL) and a P@1-vs-time plot.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "apps/cli_common.h"
#include "apps/commands.h"
#include "apps/compare_report.h"
#include "apps/interrupt.h"
#include "apps/plot_launcher.h"
#include "apps/progress_line.h"
#include "apps/report.h"
#include "apps/run_setup.h"
#include "apps/validation_args.h"
#include "core/cluster/cluster.h"
#include "core/engine/compare.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/file_io.h"
#include "kernels/replicas.h"

namespace hetsgd::app {
namespace {

struct CompareArgs : RunArgs {
  std::string algos = "adaptive,sync,avg";
  std::string out = "compare_out";
  bool json = false;
  bool no_plot = false;
};

int run_compare(CompareArgs& a) {
  a.opts.validate();
  CompareOptions co;
  co.algos = parse_algos(a.algos);
  a.opts.keep_final_state = false;  // each algorithm's run ends with its report
  // The runs are reported, not saved: their best models wait on disk, not in memory.
  a.opts.best_model_file = best_model_file_for(a.out + "/model", "");
  // Under mpirun every rank runs each algorithm as one node; rank 0 alone reports and writes.
  Cluster& cluster = world_cluster();
  if (!cluster.is_root()) a.quiet = true;

  Progress progress(a.quiet);
  const TrainingData data = load_training_data(&a.data, a.val, a.quiet, &a.opts);
  // From here a signal is answered: the allocation of the replicas by an error, each run at a
  // batch boundary (no further algorithm starts).
  const StopOnSignal signals;
  // The run `hetsgd train` would make of these options (model, automatic schedule,
  // calibration, backend); compare varies only the algorithm.
  const FrontEndRun run_setup = make_run_setup(a, data.train, signals.flag());
  co.config = run_setup.setup.config;
  co.base = run_setup.setup.options;
  co.calibration = run_setup.setup.calibration;
  const std::vector<DeviceId>& ids = run_setup.ids;
  const bool emulated = any_emulated(ids);
  if (cluster.is_root()) {
    std::error_code made;
    std::filesystem::create_directories(a.out, made);
    if (made || !std::filesystem::is_directory(a.out)) {
      throw IoError("--out '" + a.out + "': cannot create the output folder" +
                    (made ? ": " + made.message() : std::string(": a file of that name exists")));
    }
  }
  add_scratch_file(co.base.best_model_file);
  const std::string curves_csv = a.out + "/curves.csv";
  const std::string curves_jsonl = a.out + "/curves.jsonl";
  const std::string plot_png = a.out + "/p1_vs_time.png";
  const std::string title =
      data.description + " on " + join_ids(ids) + (emulated ? " (speeds EMULATED)" : "");
  if (!a.quiet) {
    std::cerr << "hetsgd compare: " << title << '\n';
    const std::string notice = deterministic_notice(co.base, ids.size());
    if (!notice.empty()) std::cerr << "hetsgd compare: " << notice << '\n';
  }
  if (!a.quiet && cluster.size() > 1) {
    std::cerr << "hetsgd compare: " << cluster.size() << " ranks (MPI), one node each\n";
  }

  // As `train` labels them: a sampled evaluation scores N rows drawn, "test[N drawn]".
  const ProgressPlan plan =
      progress_plan(co.base, eval_sample_rows(co.base, co.config, data.test, data.val_or_null()),
                    data.test_is_train);
  const int width = terminal_columns();
  co.stop = signals.flag();
  co.indexed_topk = indexed_topk;
  const CompareResult r = compare(run_setup.setup.make_devices, run_setup.setup.make_communicator,
                                  TrainData{&data.train, &data.test, data.val_or_null(), &cluster},
                                  co, [&](Algo algo, const EvalRecord& e) {
                                    ProgressPlan p = plan;
                                    p.prefix = std::string(to_string(algo)) + ": ";
                                    progress.line(progress_line(e, p, width));
                                  });
  progress.done();
  if (!cluster.is_root()) return signals.exit_code(0);
  write_curves_csv(curves_csv, r);
  write_curves_jsonl(curves_jsonl, r);
  bool plotted = false;
  if (!a.no_plot) {
    std::vector<std::string> args = {"--input", curves_csv, "--output", plot_png, "--title", title};
    if (r.target_p1 > 0.0) {
      args.push_back("--target");
      args.push_back(std::to_string(r.target_p1));
    }
    plotted = draw_plot("plot_curves.py", args);
  }

  nlohmann::json j;
  j["command"] = "compare";
  j["data"] = data.description;
  j["devices"] = join_ids(ids);
  j["emulated"] = emulated;
  j["ranks"] = cluster.size();
  j["target_p1"] = r.target_p1;
  j["runs"] = nlohmann::json::array();
  for (const CompareRun& run : r.runs) {
    nlohmann::json rj = nlohmann::json::object();
    if (run.error.empty()) {
      rj = result_to_json(run.result, data.test.rows());
      rj.update(calibration_to_json(run.calibration));
    }
    rj["algo"] = to_string(run.algo);
    rj["error"] = run.error;
    j["runs"].push_back(rj);
  }
  j["curves_csv"] = curves_csv;
  j["plot"] = plotted ? plot_png : "";
  write_file_atomic(a.out + "/summary.json", j.dump(2) + "\n");
  if (a.json) {
    std::cout << j.dump() << '\n';
  } else {
    // Every line fits the terminal: wrapped at words, continuations indented.
    const auto print = [&](const std::string& text) {
      std::cout << wrap_words(text, width, "  ") << '\n';
    };
    print("data: " + data.description);
    print("devices: " + join_ids(ids) +
          (emulated ? "  [speeds EMULATED: no heterogeneous hardware here]" : ""));
    if (cluster.size() > 1)
      print("ranks: " + std::to_string(cluster.size()) + " (MPI; rank 0's devices)");
    print_compare_table(std::cout, r, width);
    print("curves: " + curves_csv + ", " + curves_jsonl);
    if (plotted) {
      print("plot: " + plot_png);
    } else if (!a.no_plot) {
      print("plot: not drawn (needs python3 with matplotlib and tools/plot_curves.py)");
    }
  }
  // A full disk behind stdout (--json > file) is an error, not a silent truncation.
  check_stream_written(std::cout, "stdout");
  bool all_failed = true;
  for (const CompareRun& run : r.runs) all_failed = all_failed && !run.error.empty();
  return signals.exit_code(all_failed ? 1 : 0);
}

// Training options that a comparison cannot honour are usage errors saying why, instead of
// being accepted and ignored (hidden from --help).
void refuse(CLI::App* cmd, const std::string& name, bool takes_value, const std::string& why) {
  if (CLI::Option* old = cmd->get_option_no_throw(name)) cmd->remove_option(old);
  const auto fail = [name, why] {
    throw CLI::ValidationError(name, "not a compare option: " + why);
  };
  CLI::Option* o = takes_value ? cmd->add_option_function<std::string>(
                                     name, [fail](const std::string&) { fail(); })
                               : cmd->add_flag_callback(name, fail);
  o->group("");
}

void refuse_train_only_options(CLI::App* cmd) {
  refuse(cmd, "--algo", true,
         "compare runs every algorithm of --algos (e.g. --algos=adaptive,sync)");
  const std::string one_run = "each algorithm of a comparison starts afresh";
  refuse(cmd, "--resume", true, one_run + "; resume a run with `hetsgd train --resume`");
  refuse(cmd, "--checkpoint", true, one_run + " and is not saved; use `hetsgd train --checkpoint`");
  refuse(cmd, "--checkpoint-every", true, one_run + " and is not saved");
  const std::string race =
      "compare always runs every algorithm to the same budget (its time to "
      "--target-p1 is reported); use `hetsgd train` to stop at a target";
  refuse(cmd, "--stop-at-target", false, race);
  refuse(cmd, "--no-stop-at-target", false, race);
}

}  // namespace

Runner add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  // A fair race needs a common clock: by default every algorithm gets the same training time.
  a->opts.time_budget_s = 5.0;
  a->opts.max_epochs = 0.0;
  CLI::App* cmd = app.add_subcommand(
      "compare", "run several algorithms on the same data, devices, model and time budget");
  add_run_options(cmd, a.get(), "auto");
  refuse_train_only_options(cmd);
  cmd->add_option("--algos", a->algos, "algorithms to run, in order")->capture_default_str();
  cmd->add_option("-o,--output", a->out,
                  "folder for curves.csv, curves.jsonl, summary.json and the PNG")
      ->capture_default_str();
  cmd->add_option("--out", a->out)->group("");  // the former name, kept for scripts
  cmd->add_flag("--no-plot", a->no_plot, "do not draw the PNG");
  cmd->add_flag("--json", a->json, "print one JSON record instead of the table");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  return [a] { return run_compare(*a); };
}

}  // namespace hetsgd::app
