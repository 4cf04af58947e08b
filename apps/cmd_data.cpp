// `hetsgd data gen|convert|stats` and `hetsgd devices`.
#include <iostream>
#include <memory>

#include "apps/commands.h"
#include "core/error.h"
#include "core/file_io.h"
#include "datasets/binary_cache.h"
#include "datasets/load.h"
#include "datasets/stats.h"
#include "datasets/synthetic.h"
#include "datasets/xc_format.h"
#include "kernels/registry.h"

namespace hetsgd::app {
namespace {

struct DataArgs {
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
};

void write_as(const Dataset& d, const std::string& path, const std::string& format) {
  if (format == "cache") {
    datasets::save_cache(d, path);
  } else {
    datasets::write_xc(d, path);
  }
}

int run_data(const DataArgs& a) {
  if (a.gen->parsed()) {
    datasets::SyntheticSpec spec = datasets::synthetic_preset(a.preset);
    if (a.scale != 1.0) spec = datasets::scale_rows(spec, a.scale);
    auto [train, test] = datasets::generate_synthetic(spec, a.seed);
    const std::string ext = a.format == "cache" ? ".bin" : ".txt";
    check_output_path(a.out_prefix + "_train" + ext, "data gen output");
    check_output_path(a.out_prefix + "_test" + ext, "data gen output");
    write_as(train, a.out_prefix + "_train" + ext, a.format);
    write_as(test, a.out_prefix + "_test" + ext, a.format);
    std::cout << a.out_prefix << "_train" << ext << ": " << train.rows() << " rows\n"
              << a.out_prefix << "_test" << ext << ": " << test.rows() << " rows ("
              << spec.num_features << " features, " << spec.num_labels << " labels)\n";
  } else if (a.convert->parsed()) {
    check_output_path(a.output, "data convert output");
    const Dataset d = datasets::load_dataset(a.input);
    write_as(d, a.output, a.convert_format);
    std::cout << a.input << " -> " << a.output << " (" << a.convert_format << ", " << d.rows()
              << " rows)\n";
  } else {
    const datasets::DataFormat format = datasets::detect_format(a.input);
    const Dataset d = datasets::load_dataset(a.input);
    std::cout << a.input << " (" << datasets::format_name(format) << ")\n"
              << datasets::format_stats(datasets::compute_stats(d)) << '\n';
  }
  check_stream_written(std::cout, "stdout");
  return 0;
}

}  // namespace

Runner add_data_command(CLI::App& app) {
  auto a = std::make_shared<DataArgs>();
  CLI::App* cmd = app.add_subcommand("data", "generate, convert and inspect datasets");
  cmd->require_subcommand(1);
  a->gen = cmd->add_subcommand("gen", "write a synthetic train/test pair");
  a->gen
      ->add_option("--preset", a->preset,
                   "bibtex, delicious, eurlex-4k, amazon-670k, wiki10-31k, amazoncat-13k, "
                   "delicious-200k or wiki-500k")
      ->capture_default_str();
  a->gen->add_option("--scale", a->scale, "fraction of the preset's rows")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  a->gen->add_option("--seed", a->seed, "generator seed")->capture_default_str();
  a->gen->add_option("-o,--out", a->out_prefix, "output prefix: PREFIX_train.txt, PREFIX_test.txt")
      ->capture_default_str();
  a->gen->add_option("--format", a->format, "xc (text) or cache (binary)")
      ->capture_default_str()
      ->check(CLI::IsMember({"xc", "cache"}));
  a->convert = cmd->add_subcommand("convert", "convert XC text / LIBSVM to the binary cache");
  a->convert->add_option("input", a->input, "input file")->required();
  a->convert->add_option("output", a->output, "output file")->required();
  a->convert->add_option("--format", a->convert_format, "cache (binary) or xc (text)")
      ->capture_default_str()
      ->check(CLI::IsMember({"xc", "cache"}));
  a->stats = cmd->add_subcommand("stats", "shape and label statistics of a dataset");
  a->stats->add_option("input", a->input, "input file")->required();
  return [a] { return run_data(*a); };
}

Runner add_devices_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("devices", "list the devices this build can use");
  (void)cmd;
  return [] {
    std::cout << build_info() << '\n';
    for (const std::string& line : describe_devices()) std::cout << line << '\n';
    std::cout << "auto = ";
    std::string s;
    for (const DeviceId& id : resolve_devices("auto")) s += (s.empty() ? "" : ",") + id.str();
    std::cout << s << (cuda_device_count() == 0 ? " (no GPU: second worker speed EMULATED)" : "")
              << '\n';
    check_stream_written(std::cout, "stdout");
    return 0;
  };
}

}  // namespace hetsgd::app
