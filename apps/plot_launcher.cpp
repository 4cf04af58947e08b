#include "apps/plot_launcher.h"

#include <cstdlib>

#include "apps/cli_common.h"

namespace hetsgd::app {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string plot_command(const std::string& python, const std::string& script,
                         const std::vector<std::string>& args) {
  std::string cmd = python + " " + shell_quote(script);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  return cmd;
}

std::string find_plot_python() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(python) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "";
}

bool draw_plot(const std::string& script_name, const std::vector<std::string>& args) {
  const std::string script = find_tool(script_name);
  if (script.empty()) return false;
  const std::string python = find_plot_python();
  if (python.empty()) return false;
  // Quiet: the data files are on disk regardless; the caller reports whether a PNG exists.
  const std::string cmd = plot_command(python, script, args) + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace hetsgd::app
