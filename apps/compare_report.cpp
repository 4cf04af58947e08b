#include "apps/compare_report.h"

#include <iomanip>
#include <sstream>
#include <vector>

#include "apps/progress_line.h"
#include "apps/report.h"
#include "core/error.h"
#include "core/file_io.h"

namespace hetsgd::app {
namespace {

std::string join(const std::vector<index_t>& v, char sep) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? std::string(1, sep) : "") << v[i];
  return os.str();
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

}  // namespace

void print_compare_table(std::ostream& os, const CompareResult& result) {
  const CompareRun* sync = find_run(result, Algo::kSync);
  const double sync_ttt = sync ? sync->result.time_to_target_s : -1.0;
  const double sync_rate = sync ? sync->result.samples_per_second() : 0.0;
  std::ostringstream target;
  target << "t@P1>=" << fixed(result.target_p1, 2);
  os << std::left << std::setw(9) << "algo" << std::right << std::setw(13)
     << (result.target_p1 > 0 ? target.str() : std::string("t@target")) << std::setw(8) << "vs sync"
     << std::setw(8) << "P@1" << std::setw(8) << "P@3" << std::setw(8) << "P@5" << std::setw(9)
     << "nDCG@5" << std::setw(8) << "PSP@5" << std::setw(10) << "test max" << std::setw(9)
     << "train s" << std::setw(11) << "samples/s" << std::setw(8) << "vs sync" << std::setw(8)
     << "epochs"
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
       << std::setw(9) << fixed(r.final_metrics.ndcg_at(5), 4) << std::setw(8)
       << (r.final_metrics.has_propensity ? fixed(r.final_metrics.psp_at(5), 4) : std::string("-"))
       << std::setw(10) << fixed(r.best_p1, 4) << std::setw(9) << fixed(r.train_seconds, 2)
       << std::setw(11) << fixed(r.samples_per_second(), 0);
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
  // Footnotes wrap at words to the terminal's width.
  const int width = terminal_columns();
  os << wrap_words(
            "(P@k: test metrics of each run's selected model: the best validation evaluation "
            "when a validation set is used, else the last; PSP@5: propensity-scored P@5 from the "
            "training label counts; test max: the highest test P@1 of any "
            "evaluation, an oracle shown for reference only)",
            width, " ")
     << '\n';
  if (result.target_p1 > 0.0) {
    os << wrap_words(
              "(t@P1: training seconds, evaluation excluded, to the first evaluation with "
              "P@1 >= " +
                  fixed(result.target_p1, 2) +
                  "; '-' = not reached; 'vs sync' = sync's time divided by this run's)",
              width, " ")
       << '\n';
  }
}

std::string curves_csv_header() {
  return "algo,time_s,eval_s,epoch,round,samples,train_loss,test_loss,p1,p3,p5,ndcg1,ndcg3,"
         "ndcg5,devices_alive,device_updates,device_batch,recall5,psp1,psp3,psp5,psndcg5";
}

std::string curve_csv_line(const std::string& algo, const EvalRecord& r) {
  std::ostringstream os;
  os << std::setprecision(8) << algo << ',' << r.time_s << ',' << r.eval_s << ',' << r.epoch << ','
     << r.round << ',' << r.samples << ',' << r.train_loss << ',' << r.metrics.loss << ','
     << r.metrics.p_at(1) << ',' << r.metrics.p_at(3) << ',' << r.metrics.p_at(5) << ','
     << r.metrics.ndcg_at(1) << ',' << r.metrics.ndcg_at(3) << ',' << r.metrics.ndcg_at(5) << ','
     << r.devices_alive << ',' << join(r.device_updates, ';') << ',' << join(r.device_batch, ';')
     << ',' << r.metrics.recall_at(5) << ',' << r.metrics.psp_at(1) << ',' << r.metrics.psp_at(3)
     << ',' << r.metrics.psp_at(5) << ',' << r.metrics.psndcg_at(5);
  return os.str();
}

void write_curves_csv(const std::string& path, const CompareResult& result) {
  std::string text = curves_csv_header() + "\n";
  for (const CompareRun& run : result.runs) {
    for (const EvalRecord& r : run.result.evals)
      text += curve_csv_line(to_string(run.algo), r) + "\n";
  }
  write_file_atomic(path, text);
}

void write_curves_jsonl(const std::string& path, const CompareResult& result) {
  std::string text;
  for (const CompareRun& run : result.runs) {
    for (const EvalRecord& r : run.result.evals) {
      nlohmann::json j = eval_to_json(r);
      j["algo"] = to_string(run.algo);
      text += j.dump() + "\n";
    }
  }
  write_file_atomic(path, text);
}

}  // namespace hetsgd::app
