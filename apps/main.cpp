// hetsgd: the command line. Parses, calls the libraries, maps errors to exit codes:
// 0 ok, 1 runtime error (bad input, failed device, I/O), 2 usage error.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "apps/commands.h"
#include "apps/config_file.h"
#include "apps/interrupt.h"
#include "core/cluster/cluster.h"
#include "core/cluster/launcher_env.h"
#include "core/error.h"
#include "kernels/registry.h"

namespace {

// CLI11 shows a negatable flag as "--keep-best, --no-keep-best{false}", which reads as a
// default of false. Shown instead: "--[no-]keep-best" and its real default.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    const std::size_t comma = name.find(",--no-");
    if (positional || comma == std::string::npos || name.rfind("--", 0) != 0) return name;
    const std::string on = name.substr(2, comma - 2);
    if (name.compare(comma + 6, on.size(), on) != 0) return name;
    return "--[no-]" + on;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0 && !opt->get_default_str().empty()) {
      const std::string& d = opt->get_default_str();
      return " (default: " + (d == "true" ? std::string("on") : d == "false" ? "off" : d) + ")";
    }
    return CLI::Formatter::make_option_opts(opt);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hetsgd: extreme multi-label training across heterogeneous devices", "hetsgd"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  app.set_version_flag("--version", hetsgd::build_info());
  app.set_config("--config", "", "read options from a TOML or key=value file (flags win)");
  // --config (and --version) are accepted after the subcommand too.
  app.fallthrough();
  std::map<CLI::App*, hetsgd::app::Runner> runners;
  auto add = [&](hetsgd::app::Runner (*f)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    hetsgd::app::Runner r = f(app);
    runners[app.get_subcommands({})[before]] = std::move(r);
  };
  add(&hetsgd::app::add_train_command);
  add(&hetsgd::app::add_eval_command);
  add(&hetsgd::app::add_predict_command);
  add(&hetsgd::app::add_compare_command);
  add(&hetsgd::app::add_share_command);
  add(&hetsgd::app::add_data_command);
  add(&hetsgd::app::add_devices_command);
  try {
    const std::string config = hetsgd::app::config_path_from_args(argc, argv);
    if (!config.empty()) hetsgd::app::check_config_file(config, app);
  } catch (const hetsgd::Error& e) {
    std::cerr << "hetsgd: error: " << e.what() << '\n';
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  // A runtime error on one rank of an mpirun job ends every rank (no rank may wait for it in a
  // collective); a single process just exits 1.
  auto fail = [](const char* what) {
    const int ranks = hetsgd::launcher_world_size();
    std::cerr << "hetsgd: error: "
              << (ranks > 1 ? "rank " + std::to_string(hetsgd::launcher_rank()) + " of " +
                                  std::to_string(ranks) + ": "
                            : std::string())
              << what << '\n';
    hetsgd::abort_job(1);
    return 1;
  };
  try {
    for (CLI::App* sub : app.get_subcommands()) return runners.at(sub)();
    return 2;
  } catch (const std::exception& e) {
    // An error a signal caused (an allocation abandoned half way) is that signal's exit.
    if (const int sig = hetsgd::app::received_signal(); sig != 0) {
      std::cerr << "hetsgd: stopped by signal " << sig << ": " << e.what() << '\n';
      return 128 + sig;
    }
    return fail(e.what());
  }
}
