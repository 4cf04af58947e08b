#include "apps/interrupt.h"

#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/cluster/launcher_env.h"
#include "core/file_io.h"

namespace hetsgd::app {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;
// One rank of an mpirun job: its message, written before exiting at once (see below).
char g_rank_msg[256];
std::atomic<bool> g_rank_job{false};
// The scratch files to remove before exiting at once; the first g_scratch_count are set.
constexpr int kMaxScratch = 8;
char g_scratch[kMaxScratch][PATH_MAX + 1];
std::atomic<int> g_scratch_count{0};

void remove_scratch() {
  const int n = g_scratch_count.load();
  for (int i = 0; i < n; ++i) ::unlink(g_scratch[i]);
}

// Async-signal-safe only: atomics, write(2), unlink(2) and _exit(2).
extern "C" void on_stop_signal(int sig) {
  // A rank cannot finish its round alone: the merge needs every rank, and mpirun sends this
  // signal to all of them when one is lost or the user interrupts it. So a rank exits now;
  // the checkpoint on disk is the last complete one (written atomically).
  if (g_rank_job.load()) {
    const ssize_t ignored = ::write(STDERR_FILENO, g_rank_msg, std::strlen(g_rank_msg));
    (void)ignored;
    remove_scratch();
    _exit(128 + sig);
  }
  if (g_stop.exchange(true)) {
    remove_scratch();
    _exit(128 + sig);
  }
  g_signal.store(sig);
  static const char msg[] =
      "\nhetsgd: stopping (training stops at the next batch boundary and writes the checkpoint "
      "and the model); signal again to quit at once\n";
  const ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

extern "C" void on_exit_signal(int sig) {
  remove_scratch();
  _exit(128 + sig);
}

}  // namespace

ExitOnSignal::ExitOnSignal() {
  struct sigaction sa {};
  sa.sa_handler = on_exit_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int_);
  ::sigaction(SIGTERM, &sa, &old_term_);
}

ExitOnSignal::~ExitOnSignal() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
}

StopOnSignal::StopOnSignal() {
  g_stop.store(false);
  g_signal.store(0);
  g_rank_job.store(launcher_world_size() > 1);
  std::snprintf(g_rank_msg, sizeof g_rank_msg,
                "\nhetsgd: rank %d: stopped by a signal (mpirun ends every rank when one is lost "
                "or interrupted); the last checkpoint is kept: restart with --resume\n",
                launcher_rank());
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

StopOnSignal::~StopOnSignal() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>* StopOnSignal::flag() const { return &g_stop; }

void add_scratch_file(const std::string& path) {
  const int n = g_scratch_count.load();
  if (path.empty() || path.size() > PATH_MAX || n == kMaxScratch) return;
  std::memcpy(g_scratch[n], path.c_str(), path.size() + 1);
  g_scratch_count.store(n + 1);  // published after the bytes
}

void forget_scratch_file(const std::string& path) {
  // The slot stays taken; an empty name makes the handler's unlink a no-op.
  for (int i = 0; i < g_scratch_count.load(); ++i) {
    if (path == g_scratch[i]) g_scratch[i][0] = '\0';
  }
}

void add_output_temp_files(const std::string& output) {
  if (output.empty()) return;
  const long pid = static_cast<long>(::getpid());
  add_scratch_file(temp_path_for(output, pid));
  std::error_code ec;
  if (std::filesystem::is_symlink(output, ec)) {
    const std::filesystem::path target = std::filesystem::weakly_canonical(output, ec);
    if (!ec) add_scratch_file(temp_path_for(target.string(), pid));
  }
}

int received_signal() { return g_signal.load(); }

int StopOnSignal::signal() const { return g_signal.load(); }

}  // namespace hetsgd::app
