/// \file apps/python/src/model_handle.h
/// A trained model held by Python: its shape and parameters, and the device and Ranker
/// (core/model/ranker.h) it was last put on for prediction (kept, so that repeated predict() calls
/// do not copy the model again).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/device.h"
#include "core/model/model_io.h"
#include "core/model/ranker.h"

namespace hetsgd::python {

/// Owns a SavedModel; device() hands out a replica loaded with its parameters.
class ModelHandle {
 public:
  explicit ModelHandle(SavedModel model) : model_(std::move(model)) {}
  /// The shape and parameters (the model file's content).
  const SavedModel& saved() const { return model_; }
  /// The model's Ranker on a device (text as --devices: "cpu", "cuda:0"; one device; its memory
  /// checked first), made on the first call for this device and thread count. The caller
  /// holds lock() while using it.
  Ranker& ranker(const std::string& spec, int threads);
  /// Serialises use of the cached device (Python threads may call predict concurrently).
  std::mutex& lock() { return mutex_; }

 private:
  SavedModel model_;
  LoadedRanker loaded_;
  std::string device_key_;
  std::mutex mutex_;
};

}  // namespace hetsgd::python
