#include "apps/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <sstream>

#include <tbb/info.h>

#include "apps/option_checks.h"
#include "core/error.h"
#include "core/faulty_device.h"
#include "core/memory_budget.h"
#include "datasets/data_source.h"
#include "datasets/synthetic.h"
#include "kernels/registry.h"
#include "kernels/replicas.h"

namespace hetsgd::app {

void add_data_options(CLI::App* cmd, DataArgs* a, const std::string& default_preset) {
  a->synthetic = default_preset;
  cmd->add_option("--train", a->train_path,
                  "training data: XC text, LIBSVM multi-label or binary cache (format detected)");
  cmd->add_option("--test", a->test_path, "test data (same formats); metrics are computed on it");
  std::string presets;
  for (const std::string& n : datasets::synthetic_preset_names()) {
    presets += (presets.empty() ? "" : ", ") + n;
  }
  cmd->add_option("--synthetic", a->synthetic,
                  "embedded synthetic data when no --train, shaped like a known set: " + presets)
      ->capture_default_str()
      ->check(parsed_by([](const std::string& t) { datasets::synthetic_preset(t); }));
  cmd->add_option("--scale", a->scale, "fraction of the synthetic preset's rows")
      ->capture_default_str()
      ->check(in_range(1e-6, 1.0));
  cmd->add_option("--data-seed", a->data_seed, "seed of the synthetic generator")
      ->capture_default_str()
      ->check(in_range(0.0, kMaxSeed));
  cmd->add_option("--format", a->format,
                  "read every data file as xc, libsvm or cache instead of detecting it (xc also "
                  "reads XC lines without their header; a cache file is always a cache)")
      ->check(parsed_by(datasets::parse_format));
}

datasets::FormatChoice format_choice(const DataArgs& a,
                                     std::optional<datasets::DataFormat> companion) {
  datasets::FormatChoice c;
  if (!a.format.empty()) c.forced = datasets::parse_format(a.format);
  c.companion = companion;
  const bool quiet = a.quiet;
  c.notice = [quiet](const std::string& message, bool guessed) {
    if (guessed || !quiet) std::cerr << "hetsgd: " << message << '\n';
  };
  return c;
}

std::vector<index_t> parse_hidden(const std::string& text) {
  std::vector<index_t> widths;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    HETSGD_CHECK(used == item.size() && used > 0 && v >= 1 && v <= (1 << 20),
                 "--hidden: '" << item << "' is not a width in [1, 1048576]");
    widths.push_back(static_cast<index_t>(v));
  }
  HETSGD_CHECK(text.empty() || text.back() != ',', "--hidden: '" << text << "' ends in a comma");
  return widths;
}

std::vector<Algo> parse_algos(const std::string& text) {
  std::vector<Algo> algos;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) algos.push_back(parse_algo(item));
  HETSGD_CHECK(!algos.empty(), "--algos is empty");
  return algos;
}

void add_model_options(CLI::App* cmd, ModelArgs* a) {
  cmd->add_option("--hidden", a->hidden,
                  "hidden layer widths, comma-separated (auto: 512 up to 100,000 labels, narrower "
                  "where the layers would pass 1.5 GB; 128 above)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& t) {
        if (t != "auto") parse_hidden(t);
      }));
  add_enum_option(cmd, "--loss", &a->loss, "softmax (CE on normalised targets) or bce (one-vs-all)",
                  "loss");
  add_enum_option(cmd, "--optimizer", &a->optimizer, "sgd or adam", "optimizer");
  // Ranges checked at parse time (exit 2 naming option, value and bound); NaN and infinities
  // are refused by in_range.
  cmd->add_option("--momentum", a->momentum, "SGD momentum")
      ->capture_default_str()
      ->check(in_range(0.0, 0.999));
  cmd->add_option("--weight-decay", a->weight_decay, "L2 weight decay")
      ->capture_default_str()
      ->check(in_range(0.0, 1.0));
  cmd->add_option("--seed", a->seed, "model initialisation seed")
      ->capture_default_str()
      ->check(in_range(0.0, kMaxSeed));
  cmd->add_option("--dropout", a->dropout,
                  "training: inverted dropout on every hidden layer's output (0 = off; auto: "
                  "0.5 up to 100,000 labels, 0 above)")
      ->each([a](const std::string&) { a->dropout_given = true; })
      ->default_str("auto")
      ->check(in_range(0.0, kMaxDropout));
  cmd->add_option("--input-dropout", a->input_dropout,
                  "training: dropout of the input's feature values (0 = off)")
      ->capture_default_str()
      ->check(in_range(0.0, kMaxDropout));
  cmd->add_option("--label-smoothing", a->label_smoothing,
                  "training: softmax target (1-e) y/|y| + e/L (0 = off; softmax loss only; "
                  "auto: 0.3 up to --score-chunk labels scored in full, 0 above or with bce)")
      ->each([a](const std::string&) { a->label_smoothing_given = true; })
      ->default_str("auto")
      ->check(in_range(0.0, kMaxLabelSmoothing));
  ShortlistConfig& s = a->shortlist;
  add_enum_option(cmd, "--output-layer", &a->output_layer,
                  "output layer in training: full (every label), shortlist (positives + ANN hard "
                  "negatives + sampled negatives), auto (shortlist above --shortlist-above labels)",
                  "output layer");
  cmd->add_option("--score-chunk", s.score_chunk,
                  "labels scored at a time when every label is scored (memory O(batch x chunk))")
      ->capture_default_str()
      ->check(in_range(1, 1 << 24));
  cmd->add_option("--shortlist-above", s.auto_labels,
                  "--output-layer=auto shortlists above this label count")
      ->capture_default_str()
      ->check(in_range(0, kMaxCount));
  cmd->add_option("--hard-negatives", s.hard_negatives,
                  "shortlist: nearest labels per row from the ANN index (0 = no index)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 16));
  cmd->add_option("--sampled-negatives", s.sampled_negatives,
                  "shortlist: uniformly sampled negative labels per batch")
      ->capture_default_str()
      ->check(in_range(0, 1 << 24));
  cmd->add_option("--max-positives", s.max_positives,
                  "shortlist: positives of a row each step trains on, drawn anew each step "
                  "(0 = all)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 24));
  cmd->add_option("--index-rebuild-steps", s.rebuild_steps,
                  "shortlist: ANN index builds start at multiples of this many optimiser steps "
                  "(built in the background, installed at a step fixed in advance)")
      ->capture_default_str()
      ->check(in_range(1, 1 << 30));
  cmd->add_flag("--index-wait", s.wait_for_index,
                "shortlist: build the index at every rebuild step and install it at the next one "
                "(--deterministic implies it); without it builds are spaced and installed by "
                "their expected cost. Either way a run does not depend on timing");
  cmd->add_option("--index-duty", s.index_duty,
                  "shortlist: the fraction of the steps index builds are expected to run "
                  "(without --index-wait)")
      ->capture_default_str()
      ->check(in_range(1e-6, 1.0));
  cmd->add_option("--ann-m", s.ann_m, "shortlist: HNSW graph degree M")
      ->capture_default_str()
      ->check(in_range(2, 256));
  cmd->add_option("--ann-ef-construction", s.ann_ef_construction,
                  "shortlist: HNSW candidate list size while building")
      ->capture_default_str()
      ->check(in_range(1, 1 << 16));
  cmd->add_option("--ann-ef-search", s.ann_ef_search,
                  "shortlist: HNSW candidate list size per query")
      ->capture_default_str()
      ->check(in_range(1, 1 << 16));
  add_enum_option(cmd, "--output-optimizer", &a->output_optimizer,
                  "shortlist: optimiser of the output layer, sgd (plain) or adam (lazy)",
                  "optimizer");
  cmd->add_option("--output-lr-scale", s.lr_scale,
                  "shortlist: output-layer learning rate as a multiple of the schedule's")
      ->capture_default_str()
      ->check(in_range(1e-6, 1e6));
}

void add_device_options(CLI::App* cmd, DeviceArgs* a, const std::string& default_devices) {
  a->devices = default_devices;
  cmd->add_option("--devices", a->devices,
                  "devices: auto (every GPU, else cpu:0,cpu:1@0.33), or a list of cpu, cpu:N, "
                  "cuda:N; @F emulates a device at F of its speed")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& t) { parse_device_list(t); }, "auto"));
  cmd->add_option("--threads", a->threads,
                  "threads per CPU device (0 = hardware threads / CPU devices)")
      ->capture_default_str()
      ->check(in_range(0, 4096));
  cmd->add_flag("--tf32", a->tf32, "allow TF32 tensor-core GEMMs on CUDA devices");
  cmd->add_option("--inject-fault", a->inject_fault,
                  "make device I fail: I:after=N (after N steps) or I:p=F (each step with "
                  "probability F); training continues on the others");
}

LoadedData load_data(const DataArgs& a) {
  datasets::DataRequest request;
  request.train_path = a.train_path;
  request.test_path = a.test_path;
  request.synthetic = a.synthetic;
  request.scale = a.scale;
  request.data_seed = a.data_seed;
  request.format = format_choice(a);
  return datasets::load_data_pair(request);
}

ModelConfig make_model_config(const ModelArgs& a, const Dataset& data, bool deterministic) {
  ModelConfig c;  // hidden, dropout and smoothing automatic until resolve_model()
  c.num_features = data.num_features;
  c.num_labels = data.num_labels;
  if (a.hidden != "auto") c.hidden = parse_hidden(a.hidden);
  c.loss = a.loss;
  c.optimizer.kind = a.optimizer;
  c.optimizer.momentum = a.momentum;
  c.optimizer.weight_decay = a.weight_decay;
  c.seed = a.seed;
  if (a.dropout_given) c.dropout = a.dropout;
  c.input_dropout = a.input_dropout;
  c.output_layer = a.output_layer;
  c.shortlist = a.shortlist;
  if (a.label_smoothing_given) c.label_smoothing = a.label_smoothing;
  c.shortlist.optimizer = a.output_optimizer;
  c.shortlist.wait_for_index = a.shortlist.wait_for_index || deterministic;
  c = resolve_model(c, static_cast<double>(available_memory_bytes()));
  c.validate();
  return c;
}

std::pair<std::vector<DeviceId>, hetsgd::DeviceOptions> resolve_device_args(const DeviceArgs& a) {
  std::vector<DeviceId> ids = resolve_devices(a.devices);
  hetsgd::DeviceOptions opts;
  opts.tf32 = a.tf32;
  HETSGD_CHECK(a.threads >= 0, "--threads " << a.threads << " < 0");
  int cpu_devices = 0;
  for (const DeviceId& id : ids) cpu_devices += id.kind == DeviceKind::kCpu ? 1 : 0;
  // The cores this process may run on, not the machine's: mpirun binds each rank to its own.
  const int hw = std::max(1, tbb::info::default_concurrency());
  opts.threads = a.threads > 0 ? a.threads : std::max(1, hw / std::max(1, cpu_devices));
  return {ids, opts};
}

std::vector<std::unique_ptr<Device>> make_devices(const std::vector<DeviceId>& ids,
                                                  const ModelConfig& config,
                                                  const hetsgd::DeviceOptions& options,
                                                  const std::string& inject_fault,
                                                  const TrainOptions* run,
                                                  const std::atomic<bool>* stop) {
  std::vector<InjectedFault> faults;
  if (!inject_fault.empty()) faults.push_back(parse_injected_fault(inject_fault, ids.size()));
  const RunFootprint footprint = run != nullptr ? run->footprint() : RunFootprint{};
  return make_replicas(ids, config, options, faults, run != nullptr ? &footprint : nullptr, stop);
}

bool any_emulated(const std::vector<DeviceId>& ids) {
  for (const DeviceId& id : ids) {
    if (id.emulated()) return true;
  }
  return false;
}

std::string join_ids(const std::vector<DeviceId>& ids) {
  std::string s;
  for (const DeviceId& id : ids) s += (s.empty() ? "" : ",") + id.str();
  return s;
}

std::string find_tool(const std::string& name) {
  const char* env = std::getenv("HETSGD_TOOLS_DIR");
  const std::string p =
      (env != nullptr ? std::string(env) : std::string(HETSGD_SOURCE_DIR) + "/tools") + "/" + name;
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? p : "";
}

std::string deterministic_notice(const TrainOptions& options, std::size_t devices) {
  if (!options.deterministic || devices < 2) return "";
  // Everything that follows measured speed is timing, so a reproducible run gives it up; with
  // one device there is nothing to route or adapt, and no notice.
  return "--deterministic on " + std::to_string(devices) +
         " devices: no routing or batch adaptation (each round's batches are handed out in slot "
         "order, so a faster device takes no more of them; proportional batch sizes stay at b0 "
         "and the automatic round size stays fixed)";
}

Progress::Progress(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) != 0) {}
Progress::~Progress() { done(); }

void Progress::line(const std::string& text) {
  if (quiet_) return;
  if (tty_) {
    std::cerr << "\r\033[K" << text << std::flush;
    open_ = true;
  } else {
    std::cerr << text << '\n';
  }
}

void Progress::done() {
  if (open_) std::cerr << '\n';
  open_ = false;
}

}  // namespace hetsgd::app
