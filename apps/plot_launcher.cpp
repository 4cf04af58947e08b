#include "apps/plot_launcher.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>

#include "apps/cli_common.h"

extern char** environ;

namespace hetsgd::app {

int run_quietly(const std::vector<std::string>& argv) {
  if (argv.empty()) return -1;
  // posix_spawnp rather than std::system: system() ignores SIGINT in the caller while the child
  // runs, so a Ctrl-C during a plot would be lost instead of stopping the command.
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return -1;
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;  // our own signal handler interrupted the wait: keep waiting
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string find_plot_python() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    if (run_quietly({python, "-c", "import matplotlib"}) == 0) return python;
  }
  return "";
}

bool draw_plot(const std::string& script_name, const std::vector<std::string>& args) {
  const std::string script = find_tool(script_name);
  if (script.empty()) return false;
  const std::string python = find_plot_python();
  if (python.empty()) return false;
  // Quiet: the data files are on disk regardless; the caller reports whether a PNG exists.
  std::vector<std::string> argv{python, script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_quietly(argv) == 0;
}

}  // namespace hetsgd::app
