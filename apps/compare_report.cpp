#include "apps/compare_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>
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
  print_compare_table(os, result, terminal_columns());
}

void print_compare_table(std::ostream& os, const CompareResult& result, int width) {
  const CompareRun* sync = find_run(result, Algo::kSync);
  const double sync_ttt = sync ? sync->result.time_to_target_s : -1.0;
  const double sync_rate = sync ? sync->result.samples_per_second() : 0.0;
  // One column per quantity; `min` is its width on a wide terminal (the header's alignment).
  struct Column {
    Column(std::string h, int m, bool l = false) : head(std::move(h)), min(m), left(l) {}
    std::string head;
    int min;
    bool left;
    std::vector<std::string> cells;
  };
  std::vector<Column> cols = {
      {"algo", 9, true},
      {result.target_p1 > 0 ? "t@P1>=" + fixed(result.target_p1, 2) : "t@target", 13},
      {"vs sync", 8},
      {"P@1", 8},
      {"P@3", 8},
      {"P@5", 8},
      {"nDCG@5", 9},
      {"PSP@5", 8},
      {"test max", 10},
      {"train s", 9},
      {"samples/s", 11},
      {"vs sync", 8},
      {"epochs", 8},
      {"updates per device", 0, true},
      {"final batch sizes", 0, true}};
  std::vector<std::string> notes;  // failed runs and devices, after the table
  for (const CompareRun& run : result.runs) {
    if (!run.error.empty()) {
      notes.push_back(std::string(to_string(run.algo)) + " failed: " + run.error);
      continue;
    }
    const TrainResult& r = run.result;
    const bool hit = r.time_to_target_s >= 0.0;
    if (r.final_indexed) {
      notes.push_back(std::string(to_string(run.algo)) +
                      ": test metrics ranked through label clusters, recall@1/3/5 against exact " +
                      fixed(r.index_recall.at_k(1), 3) + " / " + fixed(r.index_recall.at_k(3), 3) +
                      " / " + fixed(r.index_recall.at_k(5), 3) + " on " +
                      std::to_string(r.index_recall.rows) + " rows (--exact-eval: exact)");
    }
    // The metrics are of the blend the run would save: its weights are named.
    const Calibration& c = run.calibration;
    if (c.forest_weight > 0.0 || c.linear_weight > 0.0 || c.tail_weight > 0.0) {
      std::ostringstream blend;
      blend << to_string(run.algo) << ": ranked with forest weight " << c.forest_weight;
      if (c.forest_weight > 0.0) blend << " (" << c.forest_trees << " trees)";
      blend << ", linear weight " << c.linear_weight << ", tail weight " << c.tail_weight;
      if (c.refit) blend << "; experts refit on the validation rows too";
      notes.push_back(blend.str());
    }
    std::vector<index_t> updates, batches;
    for (const DeviceSummary& d : r.devices) {
      updates.push_back(d.updates);
      batches.push_back(d.batch_size);
      if (!d.alive) {
        notes.push_back(std::string(to_string(run.algo)) + ": " + d.id.str() + " failed (" +
                        d.failure + ")");
      }
    }
    const std::vector<std::string> row = {
        to_string(run.algo),
        hit ? fixed(r.time_to_target_s, 2) : "-",
        hit && sync_ttt > 0.0 ? fixed(sync_ttt / r.time_to_target_s, 2) + "x" : "-",
        fixed(r.final_metrics.p_at(1), 4),
        fixed(r.final_metrics.p_at(3), 4),
        fixed(r.final_metrics.p_at(5), 4),
        fixed(r.final_metrics.ndcg_at(5), 4),
        r.final_metrics.has_propensity ? fixed(r.final_metrics.psp_at(5), 4) : "-",
        fixed(r.best_p1, 4),
        fixed(r.train_seconds, 2),
        fixed(r.samples_per_second(), 0),
        sync_rate > 0.0 ? fixed(r.samples_per_second() / sync_rate, 2) + "x" : "-",
        fixed(r.epochs, 2),
        join(updates, '/'),
        join(batches, '/')};
    for (std::size_t c = 0; c < cols.size(); ++c) cols[c].cells.push_back(row[c]);
  }
  // Widths: at least the wide layout's, and two blanks before the longest entry.
  std::vector<int> w(cols.size());
  for (std::size_t c = 0; c < cols.size(); ++c) {
    std::size_t longest = cols[c].head.size();
    for (const std::string& cell : cols[c].cells) longest = std::max(longest, cell.size());
    w[c] = std::max(cols[c].min, static_cast<int>(longest) + (c == 0 ? 1 : 2));
  }
  // Too wide for the terminal: the columns after `algo` go into blocks that fit, one under
  // the other, each repeating `algo` (a column wider than the terminal stands alone).
  const std::size_t rows = cols[0].cells.size();
  // Without a successful run there is no table, only the notes.
  for (std::size_t first = 1; rows > 0 && first < cols.size();) {
    std::size_t last = first;
    int used = w[0] + w[first];
    while (last + 1 < cols.size() && used + w[last + 1] <= width) used += w[++last];
    if (first > 1) os << '\n';
    std::vector<std::size_t> block = {0};
    for (std::size_t c = first; c <= last; ++c) block.push_back(c);
    for (std::size_t r = 0; r <= rows; ++r) {
      std::ostringstream line;
      for (std::size_t c : block) {
        const std::string& text = r == 0 ? cols[c].head : cols[c].cells[r - 1];
        if (!cols[c].left) {
          line << std::right << std::setw(w[c]) << text;
        } else if (c == 0) {
          line << std::left << std::setw(w[c]) << text;
        } else {
          line << "  " << std::left << std::setw(w[c] - 2) << text;
        }
      }
      std::string text = line.str();
      text.erase(text.find_last_not_of(' ') + 1);
      os << text << '\n';
    }
    first = last + 1;
  }
  for (const std::string& note : notes) os << wrap_words(note, width, "  ") << '\n';
  // Footnotes wrap at words to the terminal's width.
  os << wrap_words(
            "(P@k: test metrics of each run's model as `hetsgd train` saves it: the best "
            "validation evaluation when a validation set is used, else the last, with the label "
            "forest, the linear classifiers and the tail weight chosen after training (--forest, "
            "--linear, --tail-weight); PSP@5: "
            "propensity-scored P@5 from the "
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
