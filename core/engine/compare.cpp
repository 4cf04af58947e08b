#include "core/engine/compare.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace hetsgd {
namespace {

std::string join(const std::vector<index_t>& v, char sep) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? std::string(1, sep) : "") << v[i];
  return os.str();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::ofstream open_for_writing(const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw IoError(path + ": cannot open for writing");
  return out;
}

const CompareRun* find_run(const CompareResult& r, Algo algo) {
  for (const CompareRun& run : r.runs) {
    if (run.algo == algo && run.error.empty()) return &run;
  }
  return nullptr;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

}  // namespace

CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const Dataset& train_set, const Dataset& test_set,
                      const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval) {
  HETSGD_CHECK(make_devices != nullptr, "compare: no device factory");
  HETSGD_CHECK(!options.algos.empty(), "compare: no algorithm to run");
  CompareResult out;
  out.target_p1 = options.base.target_p1;
  for (Algo algo : options.algos) {
    CompareRun run;
    run.algo = algo;
    TrainOptions o = options.base;
    o.algo = algo;
    if (options.race_to_budget) o.stop_at_target = false;
    try {
      std::vector<std::unique_ptr<Device>> devices = make_devices();
      std::vector<Device*> raw;
      for (auto& d : devices) raw.push_back(d.get());
      std::unique_ptr<Communicator> comm = make_comm ? make_comm(raw) : make_host_communicator();
      TrainCallbacks cb;
      if (on_eval) cb.on_eval = [&](const EvalRecord& r) { on_eval(algo, r); };
      run.result = train(raw, *comm, train_set, test_set, o, cb);
    } catch (const std::exception& e) {
      if (!options.keep_going) throw;
      run.error = e.what();
    }
    out.runs.push_back(std::move(run));
  }
  if (!options.curves_csv.empty()) write_curves_csv(options.curves_csv, out);
  if (!options.curves_jsonl.empty()) write_curves_jsonl(options.curves_jsonl, out);
  if (!options.plot_png.empty() && !options.plot_script.empty()) {
    const std::string curves =
        !options.curves_csv.empty() ? options.curves_csv : options.curves_jsonl;
    const std::string python =
        options.plot_python.empty() ? find_plot_python() : options.plot_python;
    if (!curves.empty() && !python.empty()) {
      out.plot_command = plot_command(options.plot_script, curves, options.plot_png, options.title,
                                      options.base.target_p1, python);
      // Quiet on failure: the curves are on disk regardless; plot_status tells the caller.
      out.plot_status = std::system((out.plot_command + " >/dev/null 2>&1").c_str());
    }
  }
  return out;
}

void print_compare_table(std::ostream& os, const CompareResult& result) {
  const CompareRun* sync = find_run(result, Algo::kSync);
  const double sync_ttt = sync ? sync->result.time_to_target_s : -1.0;
  const double sync_rate = sync ? sync->result.samples_per_second() : 0.0;
  std::ostringstream target;
  target << "t@P1>=" << fixed(result.target_p1, 2);
  os << std::left << std::setw(9) << "algo" << std::right << std::setw(13)
     << (result.target_p1 > 0 ? target.str() : std::string("t@target")) << std::setw(8) << "vs sync"
     << std::setw(8) << "P@1" << std::setw(8) << "P@3" << std::setw(8) << "P@5" << std::setw(9)
     << "nDCG@5" << std::setw(10) << "best P@1" << std::setw(9) << "train s" << std::setw(11)
     << "samples/s" << std::setw(8) << "vs sync" << std::setw(8) << "epochs"
     << "  updates per device"
     << "  final batch sizes\n";
  for (const CompareRun& run : result.runs) {
    os << std::left << std::setw(9) << to_string(run.algo) << std::right;
    if (!run.error.empty()) {
      os << "  failed: " << run.error << "\n";
      continue;
    }
    const TrainResult& r = run.result;
    const bool hit = r.time_to_target_s >= 0.0;
    os << std::setw(13) << (hit ? fixed(r.time_to_target_s, 2) : std::string("-"));
    os << std::setw(8)
       << (hit && sync_ttt > 0.0 ? fixed(sync_ttt / r.time_to_target_s, 2) + "x"
                                 : std::string("-"));
    os << std::setw(8) << fixed(r.final_metrics.p_at(1), 4) << std::setw(8)
       << fixed(r.final_metrics.p_at(3), 4) << std::setw(8) << fixed(r.final_metrics.p_at(5), 4)
       << std::setw(9) << fixed(r.final_metrics.ndcg_at(5), 4) << std::setw(10)
       << fixed(r.best_p1, 4) << std::setw(9) << fixed(r.train_seconds, 2) << std::setw(11)
       << fixed(r.samples_per_second(), 0);
    os << std::setw(8)
       << (sync_rate > 0.0 ? fixed(r.samples_per_second() / sync_rate, 2) + "x" : std::string("-"));
    os << std::setw(8) << fixed(r.epochs, 2);
    std::vector<index_t> updates, batches;
    std::string failed;
    for (const DeviceSummary& d : r.devices) {
      updates.push_back(d.updates);
      batches.push_back(d.batch_size);
      if (!d.alive) failed += " " + d.id.str() + " failed (" + d.failure + ")";
    }
    os << "  " << join(updates, '/') << "  " << join(batches, '/') << failed << "\n";
  }
  os << "(P@k: at the end of the budget; best P@1: the highest of any evaluation on the way)\n";
  if (result.target_p1 > 0.0) {
    os << "(t@P1: training seconds, evaluation excluded, to the first evaluation with P@1 >= "
       << fixed(result.target_p1, 2) << "; '-' = not reached; 'vs sync' = ratio to sync)\n";
  }
}

std::string curves_csv_header() {
  return "algo,time_s,eval_s,epoch,round,samples,train_loss,test_loss,p1,p3,p5,ndcg1,ndcg3,"
         "ndcg5,devices_alive,device_updates,device_batch";
}

std::string curve_csv_line(const std::string& algo, const EvalRecord& r) {
  std::ostringstream os;
  os << std::setprecision(8) << algo << ',' << r.time_s << ',' << r.eval_s << ',' << r.epoch << ','
     << r.round << ',' << r.samples << ',' << r.train_loss << ',' << r.metrics.loss << ','
     << r.metrics.p_at(1) << ',' << r.metrics.p_at(3) << ',' << r.metrics.p_at(5) << ','
     << r.metrics.ndcg_at(1) << ',' << r.metrics.ndcg_at(3) << ',' << r.metrics.ndcg_at(5) << ','
     << r.devices_alive << ',' << join(r.device_updates, ';') << ',' << join(r.device_batch, ';');
  return os.str();
}

std::string curve_json_line(const std::string& algo, const EvalRecord& r) {
  nlohmann::json j;
  j["algo"] = algo;
  j["time_s"] = r.time_s;
  j["eval_s"] = r.eval_s;
  j["epoch"] = r.epoch;
  j["round"] = r.round;
  j["samples"] = r.samples;
  j["train_loss"] = r.train_loss;
  j["test_loss"] = r.metrics.loss;
  j["p1"] = r.metrics.p_at(1);
  j["p3"] = r.metrics.p_at(3);
  j["p5"] = r.metrics.p_at(5);
  j["ndcg1"] = r.metrics.ndcg_at(1);
  j["ndcg3"] = r.metrics.ndcg_at(3);
  j["ndcg5"] = r.metrics.ndcg_at(5);
  j["devices_alive"] = r.devices_alive;
  j["device_updates"] = r.device_updates;
  j["device_batch"] = r.device_batch;
  return j.dump();
}

void write_curves_csv(const std::string& path, const CompareResult& result) {
  std::ofstream out = open_for_writing(path);
  out << curves_csv_header() << '\n';
  for (const CompareRun& run : result.runs) {
    for (const EvalRecord& r : run.result.evals)
      out << curve_csv_line(to_string(run.algo), r) << '\n';
  }
  if (!out) throw IoError(path + ": write failed");
}

void write_curves_jsonl(const std::string& path, const CompareResult& result) {
  std::ofstream out = open_for_writing(path);
  for (const CompareRun& run : result.runs) {
    for (const EvalRecord& r : run.result.evals)
      out << curve_json_line(to_string(run.algo), r) << '\n';
  }
  if (!out) throw IoError(path + ": write failed");
}

std::string plot_command(const std::string& script, const std::string& curves,
                         const std::string& png, const std::string& title, double target_p1,
                         const std::string& python) {
  std::string cmd = python + " " + shell_quote(script) + " --input " + shell_quote(curves) +
                    " --output " + shell_quote(png);
  if (!title.empty()) cmd += " --title " + shell_quote(title);
  if (target_p1 > 0.0) cmd += " --target " + fixed(target_p1, 4);
  return cmd;
}

std::string find_plot_python() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(python) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "";
}

}  // namespace hetsgd
