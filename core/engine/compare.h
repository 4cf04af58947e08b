/// \file core/engine/compare.h
/// Side-by-side runs of several algorithms on the same data and devices (DESIGN §9):
/// adaptive vs synchronous SGD vs static averaging (vs EASGD), same model, same options, same
/// time budget or target P@1; curves to CSV / JSONL, a summary table, and a P@1-vs-time plot.
///
/// core/ cannot make devices, so the caller passes a factory that returns a fresh set (same
/// ids, same initial parameters) for every run; each run is independent of the previous ones.
/// Runs happen one after another on the calling thread.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/train_options.h"
#include "core/engine/trainer.h"

namespace hetsgd {

/// Makes a fresh set of devices (replicas initialised from the model's seed) for one run.
using DeviceFactory = std::function<std::vector<std::unique_ptr<Device>>()>;
/// Makes the Communicator for one run's devices; null = make_host_communicator().
using CommunicatorFactory =
    std::function<std::unique_ptr<Communicator>(const std::vector<Device*>& devices)>;

/// What to compare and where the results go.
struct CompareOptions {
  std::vector<Algo> algos = {Algo::kAdaptive, Algo::kSync, Algo::kAvg};  ///< run in this order
  TrainOptions base;         ///< options of every run; `algo` is set per run
  std::string curves_csv;    ///< write every evaluation of every run here ("" = don't)
  std::string curves_jsonl;  ///< same, one JSON object per line ("" = don't)
  std::string plot_png;      ///< draw P@1 vs training time here ("" = no plot)
  std::string plot_script;   ///< path of tools/plot_curves.py ("" = no plot)
  /// Interpreter for the plot script; "" = find_plot_python() (the first of `python3` and
  /// `/usr/bin/python3` that imports matplotlib).
  std::string plot_python;
  std::string title;       ///< plot title (e.g. dataset and devices, "(emulated speeds)")
  bool keep_going = true;  ///< a failed run is recorded and the next one starts
  /// Every run continues to the common budget (time, epochs or rounds) after reaching
  /// base.target_p1 (TrainOptions::stop_at_target = false): the time to target is still
  /// recorded, and the final metrics of all runs then compare at equal training time. False:
  /// base.stop_at_target decides (true = each run stops at its target).
  bool race_to_budget = true;
};

/// One algorithm's run.
struct CompareRun {
  Algo algo = Algo::kAdaptive;  ///< algorithm
  TrainResult result;           ///< its result (empty when it failed)
  std::string error;            ///< what() of the exception that ended it ("" = ran fine)
};

/// Every run plus where the files went.
struct CompareResult {
  std::vector<CompareRun> runs;  ///< in CompareOptions::algos order
  double target_p1 = 0.0;        ///< the target used for "time to target"
  std::string plot_command;      ///< the command that drew the plot ("" = none)
  int plot_status = -1;          ///< its exit status (-1 = not run)
};

/// Runs every algorithm of `options.algos` on fresh devices from `make_devices`, writes the
/// curve files, and draws the plot when `plot_script` and `plot_png` are set and python3 is
/// available (a failing plot does not fail the comparison: see plot_status). `on_eval`
/// (optional) sees every evaluation as it happens. Throws the run's exception when a run fails
/// and keep_going is false; IoError when a curve file cannot be written.
CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const Dataset& train_set, const Dataset& test_set,
                      const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval = {});

/// Prints the summary table: per algorithm, time to target P@1 and its ratio to sync, final
/// P@1/3/5 and nDCG@5, training time, samples/s and its ratio to sync, epochs, per-device
/// updates and final batch sizes, failed devices.
void print_compare_table(std::ostream& os, const CompareResult& result);

/// The header of write_curves_csv's files.
std::string curves_csv_header();
/// One CSV line (no newline) for `record` of algorithm `algo`: algo, time_s, eval_s, epoch,
/// round, samples, train_loss, test_loss, p1, p3, p5, ndcg1, ndcg3, ndcg5, devices_alive,
/// device_updates and device_batch (each as `a;b;c`).
std::string curve_csv_line(const std::string& algo, const EvalRecord& record);
/// The same fields as one JSON object (no newline), for `--log=run.jsonl`.
std::string curve_json_line(const std::string& algo, const EvalRecord& record);

/// Writes every evaluation of every successful run (CSV with header / JSONL). Throws IoError.
void write_curves_csv(const std::string& path, const CompareResult& result);
/// JSONL variant of write_curves_csv.
void write_curves_jsonl(const std::string& path, const CompareResult& result);

/// The shell command that draws `curves` (CSV or JSONL) into `png`:
/// `python 'script' --input 'curves' --output 'png' [--title '...'] [--target T]`,
/// every argument single-quoted for the shell.
std::string plot_command(const std::string& script, const std::string& curves,
                         const std::string& png, const std::string& title = "",
                         double target_p1 = 0.0, const std::string& python = "python3");

/// The first of `python3` and `/usr/bin/python3` that can import matplotlib (a virtualenv or
/// pyenv python3 on PATH often lacks Debian's python3-matplotlib), or "" when none can.
/// Runs the interpreters (about 0.5 s).
std::string find_plot_python();

}  // namespace hetsgd
