/// \file apps/cli_common.h
/// Option groups shared by the subcommands, and the helpers that turn them into library calls.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/train_flags.h"
#include "core/dataset.h"
#include "core/device.h"
#include "core/engine/train_options.h"
#include "core/model_config.h"
#include "datasets/data_source.h"

namespace hetsgd::app {

/// Where the data comes from: files, or the embedded synthetic generator.
struct DataArgs {
  std::string train_path;       ///< --train
  std::string test_path;        ///< --test
  std::string synthetic = "";   ///< --synthetic=PRESET (default when no --train)
  double scale = 1.0;           ///< --scale: fraction of the preset's rows
  std::uint64_t data_seed = 7;  ///< --data-seed
  std::string format;           ///< --format=xc|libsvm|cache ("" = detect, announced)
  bool quiet = false;           ///< -q: announce only guessed formats
};

/// Model shape and optimiser. Every default is ModelConfig's (core/model_config.h): the
/// automatic ones (hidden widths, dropout, label smoothing) are left to resolve_model() unless
/// given.
struct ModelArgs {
  /// --hidden=512[,64...]; auto: by label count (resolve_model() in core/model_config.h)
  std::string hidden = "auto";
  Loss loss = ModelConfig{}.loss;
  OptimizerKind optimizer = OptimizerConfig{}.kind;
  float momentum = OptimizerConfig{}.momentum;
  float weight_decay = OptimizerConfig{}.weight_decay;
  std::uint64_t seed = ModelConfig{}.seed;
  float dropout = 0.0f;        ///< --dropout: hidden-layer dropout in training
  bool dropout_given = false;  ///< --dropout was on the command line (else automatic)
  float input_dropout = ModelConfig{}.input_dropout;  ///< --input-dropout
  float label_smoothing = 0.0f;        ///< --label-smoothing: softmax target smoothing
  bool label_smoothing_given = false;  ///< --label-smoothing was on the command line
  OutputLayer output_layer = ModelConfig{}.output_layer;  ///< --output-layer
  /// --score-chunk, --hard-negatives, ..., --index-wait (--deterministic implies it).
  ShortlistConfig shortlist;
  OptimizerKind output_optimizer = ShortlistConfig{}.optimizer;
};

/// Devices and their resources.
struct DeviceArgs {
  std::string devices = "cpu";  ///< --devices
  int threads = 0;              ///< --threads per CPU device (0 = cores / CPU devices)
  bool tf32 = false;            ///< --tf32
  std::string inject_fault;     ///< --inject-fault=I:SPEC (device I fails as SPEC says)
};

/// A train/test pair and a description of where it came from (datasets/data_source.h).
using LoadedData = datasets::DataPair;

void add_data_options(CLI::App* cmd, DataArgs* args, const std::string& default_preset);
void add_model_options(CLI::App* cmd, ModelArgs* args);
void add_device_options(CLI::App* cmd, DeviceArgs* args, const std::string& default_devices);
/// Loads --train/--test or generates --synthetic data by the policy of datasets/data_source.h.
LoadedData load_data(const DataArgs& args);
/// --format of `args` and a notice that prints each file's format on stderr (guesses even
/// under -q); `companion` is the training data's format, for a test or validation file.
datasets::FormatChoice format_choice(const DataArgs& args,
                                     std::optional<datasets::DataFormat> companion = {});
/// Builds the model config for `data` from the model options; a `deterministic` run builds
/// the label index at every rebuild step (ShortlistConfig::wait_for_index).
ModelConfig make_model_config(const ModelArgs& args, const Dataset& data,
                              bool deterministic = false);
/// Parses `--hidden` ("256" or "512,256"): widths in [1, 2^20]; throws InvalidArgument.
std::vector<index_t> parse_hidden(const std::string& text);
/// Parses `--algos` ("adaptive,sync,avg"): each name by parse_algo(); throws InvalidArgument
/// on an unknown name or an empty list.
std::vector<Algo> parse_algos(const std::string& text);
/// Resolves --devices and --threads into ids and backend options.
std::pair<std::vector<DeviceId>, hetsgd::DeviceOptions> resolve_device_args(const DeviceArgs& args);
/// Makes one replica per id through make_replicas() (kernels/replicas.h: identical initial
/// parameters from config.seed, memory checked first); `inject_fault` ("I:after=N,p=F,seed=S")
/// makes device I fail as described (elasticity demonstrations); `run`: the training run the
/// replicas serve (null for evaluation); `stop`: a signal's flag (apps/interrupt.h), which
/// abandons the allocation (throws Error "...: interrupted").
std::vector<std::unique_ptr<Device>> make_devices(const std::vector<DeviceId>& ids,
                                                  const ModelConfig& config,
                                                  const hetsgd::DeviceOptions& options,
                                                  const std::string& inject_fault = "",
                                                  const TrainOptions* run = nullptr,
                                                  const std::atomic<bool>* stop = nullptr);
/// True when any device speed is emulated (reports must say so).
bool any_emulated(const std::vector<DeviceId>& ids);
/// "cpu:0,cpu:1@0.33".
std::string join_ids(const std::vector<DeviceId>& ids);
/// The one-line notice `train` and `compare` print on stderr (not with --quiet) when
/// --deterministic is given for more than one device, naming what it turns off (batch
/// adaptation and routing); "" otherwise.
std::string deterministic_notice(const TrainOptions& options, std::size_t devices);

/// Path of tools/NAME (plotting scripts): $HETSGD_TOOLS_DIR/NAME when that variable is set,
/// else the source tree this binary was built from; "" when the file is not there.
std::string find_tool(const std::string& name);

/// Progress lines on stderr: a live line on a terminal, plain lines otherwise.
class Progress {
 public:
  explicit Progress(bool quiet);
  ~Progress();
  void line(const std::string& text);
  void done();

 private:
  bool quiet_;
  bool tty_;
  bool open_ = false;
};

}  // namespace hetsgd::app
