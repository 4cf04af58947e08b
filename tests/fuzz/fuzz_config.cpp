// `--config=FILE` checking: the same subcommands as the command line, any file content gives
// a clean pass or a hetsgd::Error naming the file. The checker takes a path, so each input is
// written to a private file.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "apps/commands.h"
#include "apps/config_file.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

CLI::App& command_line() {
  static CLI::App* app = [] {
    auto* a = new CLI::App("hetsgd", "hetsgd");
    a->set_config("--config", "", "config file");
    for (auto add : {&hetsgd::app::add_train_command, &hetsgd::app::add_eval_command,
                     &hetsgd::app::add_predict_command, &hetsgd::app::add_compare_command,
                     &hetsgd::app::add_share_command, &hetsgd::app::add_data_command,
                     &hetsgd::app::add_devices_command}) {
      add(*a);
    }
    return a;
  }();
  return *app;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/hetsgd_fuzz_" + std::to_string(::getpid()) + ".toml";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  const bool written = std::fwrite(data, 1, size, f) == size;
  if (std::fclose(f) != 0 || !written) return 0;
  hetsgd::fuzz::expect_clean(path, [&] { hetsgd::app::check_config_file(path, command_line()); });
  std::remove(path.c_str());  // no scratch file outlives the run (a crash keeps its input)
  return 0;
}
