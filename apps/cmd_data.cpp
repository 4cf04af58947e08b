// `hetsgd data gen|convert|stats` and `hetsgd devices`.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <system_error>

#include "apps/commands.h"
#include "apps/option_checks.h"
#include "core/error.h"
#include "core/file_io.h"
#include "datasets/binary_cache.h"
#include "datasets/load.h"
#include "datasets/npz_format.h"
#include "datasets/stats.h"
#include "datasets/synthetic.h"
#include "datasets/xc_format.h"
#include "kernels/registry.h"

namespace hetsgd::app {
namespace {

/// The XC Repository's "avg. points per label": label occurrences over the label space.
double points_per_label(const datasets::DatasetStats& s) {
  return s.num_labels > 0 ? static_cast<double>(s.label_nnz) / static_cast<double>(s.num_labels)
                          : 0.0;
}

/// Options of `data gen`, `data convert` and `data stats` (training data: DataArgs).
struct DataCommandArgs {
  CLI::App* gen = nullptr;
  CLI::App* convert = nullptr;
  CLI::App* stats = nullptr;
  std::string preset = "delicious";
  double scale = 1.0;
  std::uint64_t seed = 7;
  std::string out_prefix = "synthetic";
  std::string format = "xc";             ///< data gen --format
  std::string convert_format = "cache";  ///< data convert --format
  std::string input;
  std::string output;
  bool json = false;          ///< --json: one JSON record on stdout
  bool quiet = false;         ///< -q: no notice on stderr (format guesses still)
  std::string labels;         ///< data convert --labels: the labels .npz of an .npz input
  std::string labels_output;  ///< data convert --labels-output: labels .npz (--format=npz)
  bool uncompressed = false;  ///< data convert --uncompressed: stored .npz members
};

bool is_npz(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".npz") == 0;
}

/// The .npz options of `data convert` go together: each is refused (a usage error) where it
/// would be ignored, and the labels may not overwrite the features.
void check_npz_options(const DataCommandArgs& a) {
  const bool npz_out = a.convert_format == "npz";
  if (npz_out && a.labels_output.empty()) {
    throw CLI::RequiredError(
        "--format=npz writes the features to OUTPUT and needs --labels-output");
  }
  if (!npz_out && !a.labels_output.empty()) {
    const std::string got = "(got --format=" + a.convert_format + ")";
    throw CLI::ValidationError("--labels-output", "only --format=npz writes a labels file " + got);
  }
  if (!npz_out && a.uncompressed) {
    throw CLI::ValidationError(
        "--uncompressed", "applies to --format=npz only (got --format=" + a.convert_format + ")");
  }
  std::error_code ec;
  const auto same = [&ec](const std::string& x, const std::string& y) {
    return std::filesystem::absolute(x, ec).lexically_normal() ==
               std::filesystem::absolute(y, ec).lexically_normal() ||
           std::filesystem::equivalent(x, y, ec);
  };
  if (npz_out && same(a.labels_output, a.output)) {
    const std::string why = "' is OUTPUT too: the labels would overwrite the features";
    throw CLI::ValidationError("--labels-output", "'" + a.labels_output + why);
  }
  if (!a.labels.empty() && !is_npz(a.input)) {
    throw CLI::ValidationError("--labels",
                               "is the labels .npz of an INPUT .npz; '" + a.input + "' is not one");
  }
}

/// LIBSVM multi-label text: `l1,l2 f:v ...` with 1-based feature ids and 0-based labels (the
/// convention the LIBSVM reader of datasets/libsvm_format.h reads back). Written atomically.
void write_libsvm(const Dataset& d, const std::string& path) {
  write_file_atomic(path, [&](const ByteSink& sink) {
    std::ostringstream line;
    line.precision(9);  // float values round-trip
    for (index_t r = 0; r < d.rows(); ++r) {
      line.str("");
      for (index_t j = d.y_indptr[r]; j < d.y_indptr[r + 1]; ++j) {
        line << (j == d.y_indptr[r] ? "" : ",") << d.y_indices[j];
      }
      for (index_t j = d.x_indptr[r]; j < d.x_indptr[r + 1]; ++j) {
        line << ' ' << d.x_indices[j] + 1 << ':' << d.x_values[j];
      }
      line << '\n';
      const std::string text = line.str();
      sink(text.data(), text.size());
    }
  });
}

void write_as(const Dataset& d, const std::string& path, const std::string& format) {
  if (format == "cache") {
    datasets::save_cache(d, path);
  } else if (format == "libsvm") {
    write_libsvm(d, path);
  } else {
    datasets::write_xc(d, path);
  }
}

nlohmann::json stats_to_json(const datasets::DatasetStats& s) {
  nlohmann::json j;
  j["rows"] = s.rows;
  j["num_features"] = s.num_features;
  j["num_labels"] = s.num_labels;
  j["nnz"] = s.nnz;
  j["label_nnz"] = s.label_nnz;
  j["avg_nnz"] = s.avg_nnz;
  j["min_nnz"] = s.min_nnz;
  j["max_nnz"] = s.max_nnz;
  j["density"] = s.density;
  j["avg_labels"] = s.avg_labels;
  j["max_labels"] = s.max_labels;
  j["points_per_label"] = points_per_label(s);
  j["rows_without_labels"] = s.rows_without_labels;
  j["rows_without_features"] = s.rows_without_features;
  j["features_used"] = s.features_used;
  j["labels_used"] = s.labels_used;
  j["max_label_frequency"] = s.max_label_frequency;
  j["median_label_frequency"] = s.median_label_frequency;
  j["head_1pct_share"] = s.head_1pct_share;
  j["tail_labels_le5"] = s.tail_labels_le5;
  j["min_value"] = s.min_value;
  j["max_value"] = s.max_value;
  j["binary_values"] = s.binary_values;
  return j;
}

/// How an input is read: detected, announced on stderr unless -q (a guess always is).
datasets::FormatChoice announce(const DataCommandArgs& a) {
  datasets::FormatChoice c;
  const bool quiet = a.quiet;
  c.notice = [quiet](const std::string& message, bool guessed) {
    if (guessed || !quiet) std::cerr << "hetsgd: " << message << '\n';
  };
  return c;
}

int run_data(const DataCommandArgs& a) {
  if (a.gen->parsed()) {
    datasets::SyntheticSpec spec = datasets::synthetic_preset(a.preset);
    if (a.scale != 1.0) spec = datasets::scale_rows(spec, a.scale);
    auto [train, test] = datasets::generate_synthetic(spec, a.seed);
    const std::string ext = a.format == "cache" ? ".bin" : ".txt";
    check_output_path(a.out_prefix + "_train" + ext, "data gen output");
    check_output_path(a.out_prefix + "_test" + ext, "data gen output");
    write_as(train, a.out_prefix + "_train" + ext, a.format);
    write_as(test, a.out_prefix + "_test" + ext, a.format);
    if (a.json) {
      nlohmann::json j = {{"command", "data gen"},
                          {"preset", a.preset},
                          {"data_seed", a.seed},
                          {"format", a.format},
                          {"train", a.out_prefix + "_train" + ext},
                          {"test", a.out_prefix + "_test" + ext},
                          {"train_rows", train.rows()},
                          {"test_rows", test.rows()},
                          {"num_features", spec.num_features},
                          {"num_labels", spec.num_labels}};
      std::cout << j.dump() << '\n';
    } else {
      std::cout << a.out_prefix << "_train" << ext << ": " << train.rows() << " rows\n"
                << a.out_prefix << "_test" << ext << ": " << test.rows() << " rows ("
                << spec.num_features << " features, " << spec.num_labels << " labels)\n";
    }
  } else if (a.convert->parsed()) {
    check_output_path(a.output, "data convert output");
    const bool npz_out = a.convert_format == "npz";
    if (npz_out) check_output_path(a.labels_output, "data convert --labels-output");
    HETSGD_CHECK(!is_npz(a.input) || !a.labels.empty(),
                 a.input << ": a .npz holds one matrix: give the labels with --labels=Y.npz");
    const Dataset d = is_npz(a.input) ? datasets::read_npz_pair(a.input, a.labels)
                                      : datasets::load_dataset(a.input, {}, announce(a));
    if (npz_out) {
      datasets::write_npz_pair(d, a.output, a.labels_output, !a.uncompressed);
    } else {
      write_as(d, a.output, a.convert_format);
    }
    if (a.json) {
      nlohmann::json j = {{"command", "data convert"}, {"input", a.input},
                          {"output", a.output},        {"format", a.convert_format},
                          {"rows", d.rows()},          {"num_features", d.num_features},
                          {"num_labels", d.num_labels}};
      if (npz_out) j["labels_output"] = a.labels_output;
      std::cout << j.dump() << '\n';
    } else {
      std::cout << a.input << " -> " << a.output << " (" << a.convert_format << ", " << d.rows()
                << " rows)\n";
    }
  } else {
    const datasets::DataFormat format = datasets::detect_format(a.input);
    const Dataset d = datasets::load_dataset(a.input, {}, announce(a));
    const datasets::DatasetStats st = datasets::compute_stats(d);
    if (a.json) {
      nlohmann::json j = stats_to_json(st);
      j["file"] = a.input;
      j["format"] = datasets::format_name(format);
      std::cout << j.dump() << '\n';
    } else {
      std::cout << a.input << " (" << datasets::format_name(format) << ")\n"
                << datasets::format_stats(st) << "\npoints per label: " << points_per_label(st)
                << '\n';
    }
  }
  check_stream_written(std::cout, "stdout");
  return 0;
}

}  // namespace

Runner add_data_command(CLI::App& app) {
  auto a = std::make_shared<DataCommandArgs>();
  CLI::App* cmd = app.add_subcommand("data", "generate, convert and inspect datasets");
  cmd->require_subcommand(1);
  a->gen = cmd->add_subcommand("gen", "write a synthetic train/test pair");
  std::string presets;  // from the generator's own list, so that none is left out
  for (const std::string& n : datasets::synthetic_preset_names()) {
    presets += (presets.empty() ? "" : ", ") + n;
  }
  a->gen->add_option("--preset", a->preset, "the shape of a known set: " + presets)
      ->capture_default_str();
  a->gen->add_option("--scale", a->scale, "fraction of the preset's rows")
      ->capture_default_str()
      ->check(in_range(1e-6, 1.0));
  // The generator's seed has train's name for it (--data-seed); --seed is the model's there.
  a->gen->add_option("--data-seed", a->seed, "seed of the synthetic generator")
      ->capture_default_str()
      ->check(in_range(0.0, kMaxSeed));
  a->gen->add_option("--seed", a->seed)->group("")->check(in_range(0.0, kMaxSeed));  // former
  a->gen
      ->add_option("-o,--output", a->out_prefix, "output prefix: PREFIX_train.txt, PREFIX_test.txt")
      ->capture_default_str();
  a->gen->add_option("--out", a->out_prefix)->group("");  // the former name, kept for scripts
  a->gen->add_option("--format", a->format, "xc (text) or cache (binary)")
      ->capture_default_str()
      ->check(CLI::IsMember({"xc", "cache"}));
  a->convert =
      cmd->add_subcommand("convert", "convert between XC text, LIBSVM, scipy .npz and the cache");
  a->convert->add_option("input", a->input, "input file")->required();
  a->convert->add_option("OUTPUT", a->output, "output file (or -o)");
  a->convert->add_option("-o,--output", a->output, "output file (or OUTPUT)");
  a->convert->parse_complete_callback([a] {
    if (a->output.empty()) throw CLI::RequiredError("OUTPUT (or -o,--output)");
    check_npz_options(*a);
  });
  a->convert
      ->add_option("--format", a->convert_format,
                   "output format: cache (binary), xc (text), libsvm (text) or npz "
                   "(scipy.sparse.save_npz: OUTPUT holds the features, --labels-output the "
                   "labels)")
      ->capture_default_str()
      ->check(CLI::IsMember({"xc", "cache", "libsvm", "npz"}));
  a->convert->add_option("--labels", a->labels,
                         "with an INPUT .npz of features: the .npz of its labels");
  a->convert->add_option("--labels-output", a->labels_output,
                         "with --format=npz: where the labels .npz goes");
  a->convert->add_flag("--uncompressed", a->uncompressed,
                       "with --format=npz: store the arrays (savez) instead of deflating them");
  a->stats = cmd->add_subcommand("stats", "shape and label statistics of a dataset");
  a->stats->add_option("input", a->input, "input file")->required();
  a->stats->add_flag("--json", a->json, "print the statistics as one JSON record");
  for (CLI::App* sub : {a->gen, a->convert}) {
    sub->add_flag("--json", a->json, "print what was written as one JSON record");
  }
  a->gen->add_flag("-q,--quiet", a->quiet,
                   "accepted for uniformity (gen prints nothing on stderr)");
  for (CLI::App* sub : {a->convert, a->stats}) {
    sub->add_flag("-q,--quiet", a->quiet,
                  "do not announce the input's format on stderr (a guess is still announced)");
  }
  return [a] { return run_data(*a); };
}

Runner add_devices_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("devices", "list the devices this build can use");
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the build and the devices as one JSON record");
  cmd->add_flag("-q,--quiet", *quiet, "accepted for uniformity (devices prints nothing on stderr)");
  return [json, quiet] {  // both bound to the options above for the parse
    std::string s;
    for (const DeviceId& id : resolve_devices("auto")) s += (s.empty() ? "" : ",") + id.str();
    const bool emulated = cuda_device_count() == 0;
    if (*json) {
      nlohmann::json j = {{"command", "devices"},
                          {"build", build_info()},
                          {"devices", describe_devices()},
                          {"auto", s},
                          {"auto_emulated", emulated}};
      std::cout << j.dump() << '\n';
    } else {
      std::cout << build_info() << '\n';
      for (const std::string& line : describe_devices()) std::cout << line << '\n';
      std::cout << "auto = " << s << (emulated ? " (no GPU: second worker speed EMULATED)" : "")
                << '\n';
    }
    check_stream_written(std::cout, "stdout");
    return 0;
  };
}

}  // namespace hetsgd::app
