/// \file core/engine/device_worker.h
/// One long-lived thread per Device (core/engine/README.md §Threads: "one worker thread per
/// Device").
///
/// The scheduler post()s a task and later wait()s for it; a task that throws does not kill the
/// thread: its exception travels back as a std::exception_ptr from wait(), never swallowed.
/// Keeping the thread for the whole run means a device is always driven from the same thread
/// (CUDA contexts and TBB arenas stay bound to it) and a step costs no thread creation.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hetsgd {

/// A single-slot task runner on its own thread.
class DeviceWorker {
 public:
  /// Starts the thread (idle until the first post()).
  DeviceWorker();
  /// Waits for a running task, then stops and joins the thread.
  ~DeviceWorker();
  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  /// Runs `task` on the worker thread. At most one task at a time: call wait() in between.
  void post(std::function<void()> task);
  /// Blocks until the posted task finished; returns its exception (null when it returned).
  /// Returns null at once when nothing was posted.
  std::exception_ptr wait();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> task_;
  std::exception_ptr error_;
  bool pending_ = false;
  bool quit_ = false;
  std::thread thread_;  // last: starts after the members it uses are initialised
};

}  // namespace hetsgd
