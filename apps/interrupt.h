/// \file apps/interrupt.h
/// SIGINT / SIGTERM during training: the first signal asks the run to stop at the next batch
/// boundary (the engine then merges, evaluates, writes its checkpoint, and the command saves
/// the model and prints its summary before exiting 128 + signal: 130 / 143); while the
/// replicas are allocated it stops that (make_replicas() throws) and the command exits with
/// that code, nothing saved. A second signal exits at once with that code, after removing the
/// run's scratch file (set_scratch_file). One rank of an mpirun job exits at once on the first
/// signal, saying so: its round cannot finish without the other ranks (mpirun signals all of
/// them).
#pragma once

#include <signal.h>

#include <atomic>
#include <string>

namespace hetsgd::app {

/// A file an exit at once (a second signal, an mpirun rank) removes first: the run's keep-best
/// scratch (apps/validation_args.h), the temporary files of its outputs (`<path>.tmp.<pid>`,
/// core/file_io.h). Other exits remove them through their owners. At most 8 ("" is ignored).
/// Call before the file can exist, from the main thread.
void add_scratch_file(const std::string& path);

/// Stops removing `path` on a signal (its owner has removed it).
void forget_scratch_file(const std::string& path);

/// add_scratch_file() for the temporary files write_file_atomic() uses for `output` in this
/// process: beside it, and beside the file it names when it is a symbolic link.
void add_output_temp_files(const std::string& output);

/// The signal a StopOnSignal received last (0 = none): main() maps an error that a stop
/// caused (an allocation stopped half way) to 128 + signal instead of 1.
int received_signal();

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

/// For commands with nothing to finish (predict, eval): while it lives, SIGINT and SIGTERM
/// remove the scratch files and exit at once with 128 + signal (restores the previous
/// handlers after).
class ExitOnSignal {
 public:
  ExitOnSignal();
  ~ExitOnSignal();
  ExitOnSignal(const ExitOnSignal&) = delete;
  ExitOnSignal& operator=(const ExitOnSignal&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace hetsgd::app
