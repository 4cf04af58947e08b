/// \file apps/plot_launcher.h
/// The one place the command line starts a process: drawing a PNG with one of the plotting
/// scripts in tools/ (plot_curves.py for compare, plot_shares.py for share) under a python3
/// that has Debian's matplotlib. A plot is a convenience: when no such python exists or the
/// script fails, the command still succeeds and says the plot was not drawn.
#pragma once

#include <string>
#include <vector>

namespace hetsgd::app {

/// `python 'script' 'arg1' 'arg2' ...`, every argument single-quoted for the shell.
std::string plot_command(const std::string& python, const std::string& script,
                         const std::vector<std::string>& args);

/// The first of `python3` and `/usr/bin/python3` that can import matplotlib (a virtualenv or
/// pyenv python3 on PATH often lacks Debian's python3-matplotlib), or "" when none can.
/// Runs the interpreters (about 0.5 s).
std::string find_plot_python();

/// Runs tools/`script_name` with `args` (output silenced). Returns true when the script ran
/// and exited 0; false when the script or a suitable python is missing or it failed.
bool draw_plot(const std::string& script_name, const std::vector<std::string>& args);

}  // namespace hetsgd::app
