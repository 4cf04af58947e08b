// `hetsgd eval` and `hetsgd predict`: use a saved model on a dataset.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli_common.h"
#include "apps/commands.h"
#include "apps/interrupt.h"
#include "apps/option_checks.h"
#include "apps/report.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/memory_budget.h"
#include "core/model/model_io.h"
#include "core/model/ranker.h"
#include "datasets/load.h"
#include "kernels/registry.h"
#include "kernels/replicas.h"

namespace hetsgd::app {
namespace {

struct ModelUseArgs {
  std::string model;
  std::string data;
  std::string format;           ///< --format: xc, libsvm or cache ("" = detect)
  std::string devices = "cpu";  ///< --devices (--device: the former name): one device
  std::string output;
  int threads = 0;
  int k = 5;
  bool json = false;   ///< eval: one record; predict: one record per row (JSON Lines)
  bool quiet = false;  ///< -q: no notice on stderr (errors and format guesses still)
  bool ann = false;    ///< predict: approximate top-k with the label index
  int ann_ef = 128;    ///< predict --ann: the index's candidate list per query
  std::string output_format = "lines";  ///< predict: lines or xc (score matrix with header)
  std::string scores = "raw";           ///< predict: raw or probability
  double threshold = -1e30;             ///< predict: keep scores >= this (after --scores)
  std::string train;   ///< eval --train: label counts for the propensity-scored metrics
  double psp_a = 0.0;  ///< eval --psp-a (0 = the data set family's, core/metrics.h)
  double psp_b = 0.0;  ///< eval --psp-b (0 = the data set family's)
};

using datasets::ShapeHint;

/// The name of the data in messages: "<stdin>" for `-d -`.
std::string data_name(const std::string& data) { return data == "-" ? "<stdin>" : data; }

/// The private copy of standard input: removed when it goes out of scope, whatever ends the
/// load, and by ExitOnSignal's handler when a signal ends the process first.
class StdinCopy {
 public:
  explicit StdinCopy(std::string path) : path_(std::move(path)) { add_scratch_file(path_); }
  ~StdinCopy() {
    ::unlink(path_.c_str());
    forget_scratch_file(path_);
  }
  StdinCopy(const StdinCopy&) = delete;
  StdinCopy& operator=(const StdinCopy&) = delete;
  const std::string& path() const { return path_; }

  /// Copies all of standard input into the file (created afresh, mode 0600).
  void fill() const {
    const auto fail = [&](const std::string& what) {
      throw IoError("<stdin>: " + what + ": " + std::strerror(errno));
    };
    ::unlink(path_.c_str());  // a file a dead process of the same pid left
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) fail("cannot create the temporary copy " + path_);
    std::vector<char> buf(std::size_t{1} << 16);
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        errno = err;
        fail("cannot read standard input");
      }
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(fd, buf.data() + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          const int err = errno;
          ::close(fd);
          errno = err;
          fail("cannot copy standard input to " + path_);
        }
        done += w;
      }
    }
    if (::close(fd) != 0) fail("cannot copy standard input to " + path_);
  }

 private:
  std::string path_;
};

/// `-d -`: standard input, read whole into a private temporary file in TMPDIR so that every
/// reader and format rule of load_dataset applies; messages name "<stdin>" instead of that
/// file. A SIGINT or SIGTERM while it is read removes the copy and exits 130 / 143.
Dataset load_stdin(const ShapeHint& hint, const datasets::FormatChoice& choice) {
  const std::string stem =
      (std::filesystem::path(temp_directory("-d - (standard input)")) / "hetsgd-stdin.").string();
  remove_stale_pid_files(stem);  // copies of runs that were killed (SIGKILL)
  const ExitOnSignal signals;
  const StdinCopy copy(stem + std::to_string(static_cast<long>(::getpid())));
  const std::string& tmp = copy.path();
  const auto rename = [&](std::string msg) {
    for (std::size_t at; (at = msg.find(tmp)) != std::string::npos;)
      msg.replace(at, tmp.size(), "<stdin>");
    return msg;
  };
  try {
    copy.fill();
    return datasets::load_dataset(tmp, hint, choice);
  } catch (const IoError& e) {
    throw IoError(rename(e.what()));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(rename(e.what()));
  } catch (const MemoryBudgetExceeded& e) {
    throw MemoryBudgetExceeded(rename(e.what()));
  } catch (const Error& e) {
    throw Error(rename(e.what()));
  }
}

/// Loads the model and the data, checks they fit, and puts the model on a device behind its
/// Ranker.
LoadedRanker load_on_device(const ModelUseArgs& a, Dataset* data) {
  SavedModel m = load_model(a.model);
  if (a.ann) {
    // Prediction builds the index once and wants recall, not training's cheap rebuilds and
    // queries: a denser graph and its own candidate list.
    m.config.shortlist.ann_m = std::max(m.config.shortlist.ann_m, 16);
    m.config.shortlist.ann_ef_construction = std::max(m.config.shortlist.ann_ef_construction, 100);
    m.config.shortlist.ann_ef_search = a.ann_ef;
    m.config.shortlist.hard_negatives = std::min(m.config.shortlist.hard_negatives, a.ann_ef);
  }
  // A LIBSVM file has no header: its id spaces are the model's, so a test set that happens
  // to miss the highest labels is still read at the model's width.
  datasets::FormatChoice choice;
  if (!a.format.empty()) choice.forced = datasets::parse_format(a.format);
  const ShapeHint hint{m.config.num_features, m.config.num_labels};
  *data = a.data == "-" ? load_stdin(hint, choice) : datasets::load_dataset(a.data, hint, choice);
  check_model_fits(m.config, a.model, *data, data_name(a.data));
  data->num_features = m.config.num_features;
  DeviceArgs da;
  da.devices = a.devices;
  da.threads = a.threads;
  auto [ids, opts] = resolve_device_args(da);
  opts.scoring_only = true;
  HETSGD_CHECK(ids.size() == 1, "--devices '" << a.devices
                                              << "': a saved model runs on one device, got "
                                              << ids.size());
  // The saved ranking may blend a label forest (core/forest/) or linear classifiers
  // (core/linear/) in: every label is scored.
  HETSGD_CHECK(!a.ann || m.forest == nullptr,
               a.model << " blends a label forest into its ranking: --ann searches the network's "
                          "output layer alone and cannot rank it");
  HETSGD_CHECK(!a.ann || m.linear == nullptr,
               a.model << " blends linear classifiers into its ranking: --ann searches the "
                          "network's output layer alone and cannot rank it");
  LoadedRanker r = load_ranker(m, [&, &ids = ids, &opts = opts](const ModelConfig& c) {
    return std::move(make_replicas(ids, c, opts).front());
  });
  if (!a.quiet) {
    std::cerr << "hetsgd: " << a.model << " (" << m.config.num_features << " features, "
              << m.config.num_labels << " labels) on " << r.device->name() << "; "
              << data_name(a.data) << ": " << data->rows() << " rows"
              << (m.forest != nullptr ? "; label forest blended in" : "")
              << (m.linear != nullptr ? "; linear classifiers blended in" : "") << '\n';
  }
  return r;
}

int run_eval(const ModelUseArgs& a) {
  Dataset data;
  LoadedRanker model = load_on_device(a, &data);
  // PSP@k and PSnDCG@k weigh labels by their training counts: they need the training set.
  std::vector<float> inv;
  if (!a.train.empty()) {
    const Dataset train = datasets::load_dataset(a.train, {data.num_features, data.num_labels});
    HETSGD_CHECK(train.num_labels <= data.num_labels,
                 "--train " << a.train << ": " << train.num_labels << " labels, the model has "
                            << data.num_labels);
    PropensityModel pm = propensity_model_for(a.train);
    if (a.psp_a > 0) pm.a = a.psp_a;
    if (a.psp_b > 0) pm.b = a.psp_b;
    Dataset counts = train;  // the model's label space, for labels beyond the file's highest
    counts.num_labels = data.num_labels;
    inv = inverse_propensities(counts, pm);
  }
  const RankingMetrics m =
      evaluate(*model.ranker, data, std::max(5, a.k), 2048, 0, inv.empty() ? nullptr : &inv);
  if (a.json) {
    nlohmann::json j = metrics_to_json(m);
    j["command"] = "eval";
    j["model"] = a.model;
    j["data"] = a.data;
    j["rows"] = m.rows;
    std::cout << j.dump() << '\n';
  } else {
    std::cout << data_name(a.data) << " (" << m.rows << " rows): " << format_ranking(m)
              << " loss=" << m.loss << '\n';
  }
  check_stream_written(std::cout, "stdout");
  return 0;
}

int run_predict(const ModelUseArgs& a) {
  HETSGD_CHECK(a.k >= 1 && a.k <= 1000, "-k " << a.k << " outside [1, 1000]");
  // Refuse an unusable output before the model and the data are loaded.
  if (!a.output.empty()) check_output_path(a.output, "predictions output");
  add_output_temp_files(a.output);  // an interrupt leaves no half-written temporary file
  const ExitOnSignal signals;
  HETSGD_CHECK(!a.ann || a.scores == "raw", "--scores=probability needs exact scores, not --ann");
  HETSGD_CHECK(!a.json || a.output_format == "lines",
               "--json writes JSON Lines: it replaces --output-format=" << a.output_format);
  Dataset data;
  LoadedRanker model = load_on_device(a, &data);
  Ranker& ranker = *model.ranker;
  const int k = std::min<index_t>(a.k, data.num_labels);
  const bool probability = a.scores == "probability";
  // Probabilities of a softmax need every label's score (the normaliser): rows are scored in
  // full, in blocks of at most 2^24 scores.
  const bool full_rows =
      !ranker.network_only() || (probability && ranker.network().config().loss == Loss::kSoftmax);
  const index_t chunk =
      full_rows ? std::clamp<index_t>((index_t{1} << 24) / data.num_labels, 1, 2048) : 2048;
  std::vector<col_t> labels, exact;
  std::vector<float> scores, exact_scores;
  CsrBatch batch;
  // --ann also scores every label, to report the index's recall@k against the exact top-k.
  using clock = std::chrono::steady_clock;
  double ann_s = 0.0, exact_s = 0.0;
  index_t hits = 0, wanted = 0;
  std::string text;
  // Streams "label:score ..." lines, one block of rows at a time, into `emit`.
  const auto produce = [&](const std::function<void(const std::string&)>& emit) {
    for (index_t begin = 0; begin < data.rows(); begin += chunk) {
      const index_t end = std::min(data.rows(), begin + chunk);
      slice_rows(data, begin, end, &batch);
      labels.resize(static_cast<std::size_t>(batch.rows() * k));
      scores.resize(labels.size());
      if (a.ann) {
        exact.resize(labels.size());
        exact_scores.resize(labels.size());
        const auto t0 = clock::now();
        predict_topk_ann(ranker.network(), batch, k, labels.data(), scores.data());
        const auto t1 = clock::now();
        ranker.predict_topk(batch, k, exact.data(), exact_scores.data());
        const auto t2 = clock::now();
        ann_s += std::chrono::duration<double>(t1 - t0).count();
        exact_s += std::chrono::duration<double>(t2 - t1).count();
        for (index_t r = 0; r < batch.rows(); ++r) {
          const col_t* e = exact.data() + r * k;
          const col_t* g = labels.data() + r * k;
          for (int j = 0; j < k; ++j) {
            if (e[j] < 0) continue;
            ++wanted;
            hits += std::find(g, g + k, e[j]) != g + k;
          }
        }
      } else if (probability) {
        ranker.predict_probabilities(batch, k, labels.data(), scores.data());
      } else {
        ranker.predict_topk(batch, k, labels.data(), scores.data());
      }
      std::ostringstream block;
      if (begin == 0 && a.output_format == "xc")
        block << data.rows() << ' ' << data.num_labels << '\n';
      for (index_t r = 0; r < batch.rows(); ++r) {
        if (a.json) {
          nlohmann::json row = {{"row", begin + r},
                                {"labels", nlohmann::json::array()},
                                {"scores", nlohmann::json::array()}};
          for (int j = 0; j < k; ++j) {
            if (labels[r * k + j] < 0 || scores[r * k + j] < a.threshold) continue;
            row["labels"].push_back(labels[r * k + j]);
            row["scores"].push_back(scores[r * k + j]);
          }
          block << row.dump() << '\n';
          continue;
        }
        bool first = true;
        for (int j = 0; j < k; ++j) {
          if (labels[r * k + j] < 0 || scores[r * k + j] < a.threshold) continue;
          block << (first ? "" : " ") << labels[r * k + j] << ':' << scores[r * k + j];
          first = false;
        }
        block << '\n';
      }
      text = block.str();
      emit(text);
    }
  };
  if (a.output.empty()) {
    produce([](const std::string& s) { std::cout << s; });
    check_stream_written(std::cout, "stdout");
  } else {
    // Published atomically: a full disk leaves the previous file (or none), never a prefix.
    write_file_atomic(a.output, [&](const ByteSink& sink) {
      produce([&](const std::string& s) { sink(s.data(), s.size()); });
    });
  }
  if (a.ann && !a.quiet) {
    std::cerr << "ann: recall@" << k << " = "
              << (wanted == 0 ? 1.0 : static_cast<double>(hits) / static_cast<double>(wanted))
              << " against the exact top-" << k << " over " << data.rows() << " rows (index "
              << ann_s << " s, exact " << exact_s << " s)\n";
  }
  return 0;
}

void add_common(CLI::App* cmd, ModelUseArgs* a) {
  cmd->add_option("-m,--model", a->model, "model file written by `hetsgd train -o`")->required();
  cmd->add_option("-d,--data,--test", a->data, "data file (XC text, LIBSVM or binary cache)")
      ->required();
  cmd->add_option("--format", a->format,
                  "read the data as xc, libsvm or cache instead of detecting it (xc also reads XC "
                  "lines without their header)")
      ->check(parsed_by(datasets::parse_format));
  cmd->add_option("--devices", a->devices, "the one device to run on (cpu, cpu:N or cuda:N)")
      ->capture_default_str();
  cmd->add_option("--device", a->devices)->group("");  // the former name, kept for scripts
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all)")->capture_default_str();
  cmd->add_flag("-q,--quiet", a->quiet,
                "no notice on stderr (the model, device and rows used; predict --ann's recall)");
}

}  // namespace

Runner add_eval_command(CLI::App& app) {
  auto a = std::make_shared<ModelUseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "P@k, nDCG@k, recall@k (and PSP@k, PSnDCG@k with --train) of a saved model");
  add_common(cmd, a.get());
  cmd->add_option("--train", a->train,
                  "training set whose label counts give the propensities of PSP@k / PSnDCG@k");
  cmd->add_option("--psp-a", a->psp_a,
                  "propensity A (0 = by data set name: amazon 0.6, wiki 0.5, else 0.55)")
      ->capture_default_str()
      ->check(in_range(0.0, 10.0));
  cmd->add_option("--psp-b", a->psp_b,
                  "propensity B (0 = by data set name: amazon 2.6, wiki 0.4, else 1.5)")
      ->capture_default_str()
      ->check(in_range(0.0, 100.0));
  cmd->add_flag("--json", a->json, "print the metrics as one JSON record");
  return [a] { return run_eval(*a); };
}

Runner add_predict_command(CLI::App& app) {
  auto a = std::make_shared<ModelUseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "top-k labels with scores for every input line (label:score ..., best first); -d - "
      "reads standard input");
  add_common(cmd, a.get());
  cmd->add_option("-k", a->k, "labels per line")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "write here instead of stdout");
  cmd->add_option("--output-format", a->output_format,
                  "lines (label:score per row) or xc (the XC score-matrix text pyxclib reads: a "
                  "`rows labels` header, then the same lines)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lines", "xc"}));
  cmd->add_option("--scores", a->scores,
                  "raw scores, or probability (softmax over every label, or the sigmoid of a "
                  "bce model)")
      ->capture_default_str()
      ->check(CLI::IsMember({"raw", "probability"}));
  cmd->add_option("--threshold", a->threshold,
                  "print only labels whose score (after --scores) is at least this")
      ->check(in_range(-1e30, 1e30));
  cmd->add_flag("--json", a->json,
                "one JSON record per row, {\"row\", \"labels\", \"scores\"} (JSON Lines)");
  cmd->add_flag("--ann", a->ann,
                "approximate top-k from an HNSW index over the output layer (CPU device; "
                "reports its recall@k against the exact top-k on stderr)");
  cmd->add_option("--ann-ef", a->ann_ef,
                  "with --ann: the index's candidate list per query (recall against speed)")
      ->capture_default_str()
      ->check(in_range(1, 100000));
  return [a] { return run_predict(*a); };
}

}  // namespace hetsgd::app
