/// \file core/device.h
/// Device identity and the abstract Device: one model replica on one compute device.
///
/// A Device offers coarse, per-batch operations only (never a virtual call per element). It owns
/// its parameter replica, gradient and optimiser state, and whatever handles its backend needs
/// (TBB arena, CUDA streams, cuSPARSE/cuBLAS handles). Concrete devices are made by
/// kernels/registry.h; core/ never sees a backend type.
///
/// Threads: a Device is driven by one worker thread at a time (the scheduler gives each device
/// its own worker). Different Devices may be used concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/types.h"

namespace hetsgd {

/// Kind of compute device.
enum class DeviceKind { kCpu, kCuda };

/// Smallest emulated speed factor accepted (`@0.01`: steps stretched to 100x their time).
inline constexpr double kMinEmulatedSpeed = 0.01;

/// A device address: kind, ordinal, and an optional emulated speed factor in (0, 1]
/// (`cpu:1@0.33` runs at a third of its real speed; see kernels/README.md).
struct DeviceId {
  DeviceKind kind = DeviceKind::kCpu;
  int ordinal = 0;
  double speed = 1.0;  ///< emulation factor; 1 = no emulation

  static DeviceId cpu(int ordinal = 0) { return {DeviceKind::kCpu, ordinal, 1.0}; }
  static DeviceId cuda(int ordinal = 0) { return {DeviceKind::kCuda, ordinal, 1.0}; }
  /// True when the speed is emulated (speed < 1).
  bool emulated() const { return speed < 1.0; }
  /// Text form: `cpu`, `cpu:N`, `cuda:N`, with `@F` when emulated.
  std::string str() const;
  bool operator==(const DeviceId& o) const {
    return kind == o.kind && ordinal == o.ordinal && speed == o.speed;
  }
};

/// Parses `cpu`, `cpu:N`, `cuda:N`, optionally followed by `@F` with 0 < F <= 1.
/// Throws InvalidArgument naming the text and the bound.
DeviceId parse_device_id(const std::string& text);
/// Parses a comma-separated list (`cpu:0,cpu:1@0.33`). `auto` is resolved by the registry.
std::vector<DeviceId> parse_device_list(const std::string& text);
/// gtest-friendly printer.
void PrintTo(const DeviceId& id, std::ostream* os);

/// A replica's optimiser state in host memory (Device::read_optimizer / write_optimizer).
struct OptimizerState {
  std::vector<float> first;   ///< momentum velocity or Adam first moment (empty if unused)
  std::vector<float> second;  ///< Adam second moment (empty if unused)
  std::int64_t steps = 0;     ///< optimiser steps taken (Adam's bias correction)
};

/// Consecutive floats handed to a consumer (a file writer, a checksum), `n` at a time.
using FloatSink = std::function<void(const float* data, std::size_t n)>;

/// A replica's optimiser state as Device::stream_optimizer() hands it out: the sizes and step
/// count of read_optimizer()'s result, and its moments streamed in order.
struct OptimizerStream {
  index_t first = 0;       ///< floats of the first moment (0 if unused)
  index_t second = 0;      ///< floats of the second moment (0 if unused)
  std::int64_t steps = 0;  ///< optimiser steps taken
  /// Streams moment `which` (0: first, 1: second), exactly the floats read_optimizer() would
  /// return, through `sink`. Valid while the device is idle and its state unchanged.
  std::function<void(int which, const FloatSink& sink)> stream;
};

class RowExchange;

/// The two model-sized buffers of a replica that cross the seam whole (Device::read / write).
enum class Buffer { kParams, kGradient };

/// One model replica on one compute device.
///
/// The seam is coarse: four accessors (id, name, config, layout) and thirteen operations, each
/// per batch or per model (never per element). Decorators (emulation, fault injection, test
/// hooks) derive from ForwardingDevice (core/forwarding_device.h), which forwards every one of
/// them, and override only what they change; capabilities (row_exchange(), backend()) are
/// forwarded too, so a decorated device takes the same paths as a bare one.
class Device {
 public:
  virtual ~Device() = default;

  /// The address this device was made for.
  virtual DeviceId id() const = 0;
  /// Human-readable name (e.g. "cpu:0 (2 threads)", "cuda:0 NVIDIA H200").
  virtual std::string name() const = 0;
  /// The model's shape and parameter layout (fixed at construction).
  virtual const ModelConfig& config() const = 0;
  virtual const ParamLayout& layout() const = 0;

  /// Forward, backward and one optimiser step at learning rate `lr` on `batch`.
  /// Returns the mean loss over the batch's rows (before the step).
  virtual float train_step(const CsrBatch& batch, float lr) = 0;

  /// Forward and backward only: leaves the gradient of the batch-mean loss, scaled by `scale`,
  /// in the device's gradient buffer (dense, layout.total() floats). Returns the mean loss.
  virtual float gradient(const CsrBatch& batch, float scale) = 0;
  /// One optimiser step with the gradient currently in the gradient buffer.
  virtual void apply_update(float lr) = 0;

  /// Scores of the top `k` labels for each row of `batch`, best first: `labels` and `scores`
  /// are rows*k arrays (host memory). Returns the mean loss over rows (0 when no labels).
  virtual float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) = 0;
  /// Every label's raw score (the output layer's logit, before the loss's softmax or sigmoid)
  /// for each row of `batch`: `scores` is a rows*L array (host memory), row-major. For rankers
  /// that combine the network with other experts (core/model/ranker.h); the caller bounds the rows
  /// so that rows*L fits. Returns the mean loss over rows (0 when no labels).
  virtual float score_all(const CsrBatch& batch, float* scores) = 0;

  /// Copies the parameters or the gradient buffer out / in (layout.total() floats, host
  /// memory). The helpers below name the four cases.
  virtual void read(Buffer which, float* dst) = 0;
  virtual void write(Buffer which, const float* src) = 0;
  void read_params(float* dst) { read(Buffer::kParams, dst); }
  void write_params(const float* src) { write(Buffer::kParams, src); }
  void read_gradient(float* dst) { read(Buffer::kGradient, dst); }
  void write_gradient(const float* src) { write(Buffer::kGradient, src); }

  /// Clears optimiser state (momentum, Adam moments and step count).
  virtual void reset_optimizer() = 0;
  /// The optimiser state, streamed (for checkpoints: without a model-sized copy where the
  /// backend keeps the state in host memory, as the CPU does): the moment buffers the
  /// optimiser uses (SGD with momentum: `first`; Adam: `first` and `second`; each
  /// layout.total() floats, 0 when unused) and the step count. Together with the parameters
  /// this is the whole replica.
  virtual OptimizerStream stream_optimizer() = 0;
  /// Restores a state read by read_optimizer() from a device of the same config. Throws
  /// InvalidArgument when a buffer's size does not match this device's optimiser.
  virtual void write_optimizer(const OptimizerState& state) = 0;
  /// stream_optimizer() collected into host buffers.
  OptimizerState read_optimizer();

  /// Training on this device is over (scoring, a forest's calibration and evaluation follow):
  /// its gradient and optimiser state may be given back to the system, as zeros. A step
  /// after it starts from a reset optimiser. Backends with nothing worth giving back ignore
  /// it.
  virtual void release_training_state() {}

  /// Blocks until queued work is done (no-op on the CPU).
  virtual void synchronize() {}

  /// Row-sparse exchange and host-memory access of this replica (core/row_exchange.h), or
  /// null when the device cannot list the rows it changed: merges and all-reduces of a set
  /// with such a device move every parameter (the dense path). Asked once per merge.
  virtual RowExchange* row_exchange() { return nullptr; }

  /// The backend device behind any decorators: `*this` for a backend, the wrapped device's
  /// backend() for a ForwardingDevice. For backend code that needs its own type (a CUDA
  /// communicator reaching a replica's device buffers); emulation and fault injection never
  /// change how parameters move, so looking through them is safe.
  virtual Device& backend() { return *this; }

 protected:
  /// An OptimizerStream over a state held in host memory (backends that copy it out).
  static OptimizerStream stream_of(OptimizerState state);
};

/// Options a backend needs to make a device.
struct DeviceOptions {
  int threads = 0;    ///< CPU worker threads (0 = hardware threads / CPU devices)
  bool tf32 = false;  ///< allow TF32 tensor-core GEMMs on CUDA
  /// The device will only score (eval, predict, the Python package): a CPU device leaves its
  /// optimiser state unwritten, so that its pages cost neither time nor memory until a step
  /// writes them (a CUDA device allocates as for training).
  bool scoring_only = false;
};

}  // namespace hetsgd
