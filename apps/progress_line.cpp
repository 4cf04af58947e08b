#include "apps/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "core/engine/evaluation.h"

namespace hetsgd::app {
namespace {

// `name` with the rows scored when they are fewer than the set's: an evaluation of a sample
// scores the first rows of the set in a seeded random order (run_pipeline, the validation
// split), a random draw of N rows: "[N drawn]".
std::string sampled_name(const std::string& name, index_t rows, index_t of) {
  return rows < of ? name + "[" + std::to_string(rows) + " drawn]" : name;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "42s", "3m05s", "1h02m": short enough for a line of 80.
std::string duration(double s) {
  if (s < 0) s = 0;
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t < 60) {
    std::snprintf(buf, sizeof buf, "%lds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  }
  return buf;
}

std::string rate(double per_s) {
  if (per_s >= 1e6) return format("%.1fM/s", per_s / 1e6);
  if (per_s >= 1e4) return format("%.0fk/s", per_s / 1e3);
  return format("%.0f/s", per_s);
}

}  // namespace

std::string wrap_words(const std::string& text, int width, const std::string& indent) {
  // Words keep the blanks before them (alignment padding) except at the start of a wrapped
  // line.
  std::string out, line, gap, word;
  bool fresh = true;  // the line holds nothing but its indent
  const auto flush_word = [&] {
    if (word.empty()) return;
    if (!fresh && static_cast<int>(line.size() + gap.size() + word.size()) > width) {
      out += line + "\n";
      line = indent;
      fresh = true;
    }
    line += (fresh ? "" : gap) + word;
    fresh = false;
    word.clear();
    gap.clear();
  };
  for (char c : text) {
    if (c == ' ') {
      flush_word();
      gap += c;
    } else {
      word += c;
    }
  }
  flush_word();
  return out + line;
}

int terminal_columns() {
  if (const char* env = std::getenv("COLUMNS")) {
    const int c = std::atoi(env);
    if (c >= 20 && c <= 1000) return c;
  }
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 80;
}

std::string progress_line(const EvalRecord& e, const ProgressPlan& plan, int width) {
  // Each field with its priority: when the line is too wide the least important go first,
  // and the P@1 values stay to the last.
  std::vector<std::pair<std::string, int>> fields;
  // A whole total as it was given (/8), a fraction (the middle range's sample budget) as the
  // epoch itself is shown (/2.53).
  std::string epoch = format("epoch %.2f", e.epoch);
  if (plan.epochs > 0) {
    epoch += plan.epochs == std::floor(plan.epochs) ? format("/%g", plan.epochs)
                                                    : format("/%.2f", plan.epochs);
  }
  fields.emplace_back(epoch, 9);
  // Elapsed: training and evaluation. The ETA counts training only, against the nearer limit.
  std::string clock = duration(e.time_s + e.eval_total_s);
  double left = -1.0;
  if (plan.budget_s > 0) left = plan.budget_s - e.time_s;
  if (plan.epochs > 0 && e.epoch > 0) {
    const double by_epochs = e.time_s * (plan.epochs / e.epoch - 1.0);
    left = left < 0 ? by_epochs : std::min(left, by_epochs);
  }
  if (left >= 0 && e.samples > 0) clock += " eta " + duration(left);
  fields.emplace_back(clock, 7);
  fields.emplace_back(e.time_s > 0 ? rate(static_cast<double>(e.samples) / e.time_s) : "-/s", 5);
  fields.emplace_back(e.samples > 0 ? format("loss %.4f", e.train_loss) : "loss -", 4);
  if (e.has_val)
    fields.emplace_back(plan.val_split + format(" P@1 %.4f", e.val_metrics.p_at(1)), 8);
  fields.emplace_back(plan.test_split + format(" P@1 %.4f", e.metrics.p_at(1)), 8);
  fields.emplace_back(format("P@5 %.4f", e.metrics.p_at(5)), 1);
  const auto length = [&] {
    std::size_t n = plan.prefix.size();
    for (const auto& f : fields) n += f.first.size() + 2;
    return static_cast<int>(n) - 2;
  };
  while (fields.size() > 1 && length() > width - 1) {
    auto least = fields.begin();
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      if (it->second < least->second) least = it;
    }
    fields.erase(least);
  }
  std::string line = plan.prefix;
  for (std::size_t i = 0; i < fields.size(); ++i) line += (i > 0 ? "  " : "") + fields[i].first;
  if (static_cast<int>(line.size()) > width - 1) line.resize(static_cast<std::size_t>(width - 1));
  return line;
}

EvalSampleRows eval_sample_rows(const TrainOptions& options, const ModelConfig& config,
                                const Dataset& test, const Dataset* val) {
  EvalSampleRows r;
  r.test_of = test.rows();
  r.test = in_training_test_rows(options, r.test_of, val != nullptr ? val->rows() : 0, config);
  if (val != nullptr) {
    r.val_of = val->rows();
    r.val = in_training_eval_rows(options, r.val_of, config);
  }
  return r;
}

ProgressPlan progress_plan(const TrainOptions& options, const EvalSampleRows& rows,
                           bool test_is_train) {
  ProgressPlan plan;
  plan.epochs = options.max_epochs;
  plan.budget_s = options.time_budget_s;
  plan.test_split = sampled_name(test_is_train ? "train" : "test", rows.test, rows.test_of);
  plan.val_split = sampled_name(plan.val_split, rows.val, rows.val_of);
  return plan;
}

}  // namespace hetsgd::app
