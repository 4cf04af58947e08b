#include "core/engine/device_worker.h"

#include "core/error.h"

namespace hetsgd {

DeviceWorker::DeviceWorker() : thread_([this] { loop(); }) {}

DeviceWorker::~DeviceWorker() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !pending_; });
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DeviceWorker::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    HETSGD_CHECK(!pending_, "DeviceWorker::post while a task is still running");
    task_ = std::move(task);
    error_ = nullptr;
    pending_ = true;
  }
  cv_.notify_all();
}

std::exception_ptr DeviceWorker::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !pending_; });
  std::exception_ptr e = error_;
  error_ = nullptr;
  return e;
}

void DeviceWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return pending_ || quit_; });
    if (quit_ && !pending_) return;
    std::function<void()> task = std::move(task_);
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    pending_ = false;
    cv_.notify_all();
  }
}

}  // namespace hetsgd
