#include "apps/interrupt.h"

#include <unistd.h>

#include <csignal>

namespace hetsgd::app {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;

// Async-signal-safe only: atomics, write(2) and _exit(2).
extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) _exit(128 + sig);
  g_signal.store(sig);
  static const char msg[] =
      "\nhetsgd: stopping at the next batch boundary (checkpoint and model are written); "
      "signal again to quit at once\n";
  const ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop.store(false);
  g_signal.store(0);
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

int StopOnSignal::signal() const { return g_signal.load(); }

}  // namespace hetsgd::app
