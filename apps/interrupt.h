/// \file apps/interrupt.h
/// SIGINT / SIGTERM during training: the first signal asks the run to stop at the next batch
/// boundary (the engine then merges, evaluates, writes its checkpoint, and the command saves
/// the model and prints its summary before exiting 128 + signal: 130 / 143); a second signal
/// exits at once with that code. One rank of an mpirun job exits at once on the first signal,
/// saying so: its round cannot finish without the other ranks (mpirun signals all of them).
#pragma once

#include <atomic>

namespace hetsgd::app {

/// Installs the handlers for its lifetime (restores the previous ones after).
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  /// The flag to hand to TrainCallbacks::stop.
  const std::atomic<bool>* flag() const;
  /// The signal received (0 = none).
  int signal() const;
  /// 128 + signal when one was received, else `otherwise`.
  int exit_code(int otherwise) const { return signal() != 0 ? 128 + signal() : otherwise; }
};

}  // namespace hetsgd::app
