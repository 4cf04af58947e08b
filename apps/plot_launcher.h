/// \file apps/plot_launcher.h
/// The one place the command line starts a process: drawing a PNG with one of the plotting
/// scripts in tools/ (plot_curves.py for compare, plot_shares.py for share) under a python3
/// that has Debian's matplotlib. A plot is a convenience: when no such python exists or the
/// script fails, the command still succeeds and says the plot was not drawn.
#pragma once

#include <string>
#include <vector>

namespace hetsgd::app {

/// Runs `argv` (argv[0] looked up on PATH, no shell) with stdout and stderr discarded and
/// waits for it. Returns its exit status, or -1 when it could not start or was killed. The
/// caller's signal handlers stay in force while it runs.
int run_quietly(const std::vector<std::string>& argv);

/// The first of `python3` and `/usr/bin/python3` that can import matplotlib (a virtualenv or
/// pyenv python3 on PATH often lacks Debian's python3-matplotlib), or "" when none can.
/// Runs the interpreters (about 0.5 s).
std::string find_plot_python();

/// Runs tools/`script_name` with `args` (output silenced). Returns true when the script ran
/// and exited 0; false when the script or a suitable python is missing or it failed.
bool draw_plot(const std::string& script_name, const std::vector<std::string>& args);

}  // namespace hetsgd::app
