/// \file tests/common/cli_run.h
/// Runs the `hetsgd` binary under test (HETSGD_CLI) and captures its exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace hetsgd::test {

/// Exit code and everything printed (stdout and stderr together).
struct CliRun {
  int code = -1;
  std::string out;
};

/// `hetsgd <args>` through the shell; `prefix` goes before it (ulimit, timeout, trap). A
/// signal death is reported as 128 + signal.
inline CliRun run_cli(const std::string& args, const std::string& prefix = "") {
  const std::string cmd = prefix + " " + std::string(HETSGD_CLI) + " " + args + " 2>&1";
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// run_cli() with no chart drawn (HETSGD_TOOLS_DIR names no folder): for tests about what a
/// command prints and writes, not about its plots.
inline CliRun run_cli_no_charts(const std::string& args) {
  return run_cli(args, "HETSGD_TOOLS_DIR=/nonexistent");
}

/// Runs `script` with `sh -c` (for tests that start, signal and wait for the CLI themselves)
/// and returns what it printed on stdout.
inline std::string run_shell(const std::string& script) {
  std::string out;
  FILE* p = ::popen(("sh -c '" + script + "'").c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

}  // namespace hetsgd::test
