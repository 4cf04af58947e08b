/// \file kernels/replicas.h
/// The one place replicas are made: every command (train, compare, eval/predict, profiling,
/// `share --run`'s jobs) asks make_replicas() for its devices, which estimates what they and
/// the run around them will hold, refuses what cannot fit before anything is allocated
/// (core/memory_budget.h), and applies speed emulation, fault injection and a shared label
/// index builder the same way everywhere.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/faulty_device.h"
#include "core/memory_budget.h"
#include "core/model_config.h"

namespace hetsgd {

/// A fault injected into one replica of a set (`--inject-fault I:SPEC`).
struct InjectedFault {
  std::size_t device = 0;  ///< index into the device list
  FaultSpec spec;
};

/// Parses `I:SPEC` for a set of `devices` replicas (SPEC: core/faulty_device.h). Throws
/// InvalidArgument naming the text and the index bound.
InjectedFault parse_injected_fault(const std::string& text, std::size_t devices);

/// Bytes a set of replicas will hold, by where they live. Host bytes are the process's RAM:
/// CPU replicas, the centre and the run's host buffers; a CUDA replica's parameters, gradient,
/// moments and scoring buffers are GPU bytes and are not counted against host RAM.
struct MemoryEstimate {
  std::uint64_t model = 0;      ///< host: CPU replicas' parameters and the centre Z
  std::uint64_t optimizer = 0;  ///< host: CPU replicas' gradients, moments and label indexes
  std::uint64_t buffers = 0;    ///< host: merge, selection, averaging and scoring buffers
  std::uint64_t gpu = 0;        ///< GPU memory of the CUDA replicas, summed over them
  /// Host bytes (model + optimizer + buffers), saturating.
  std::uint64_t host() const;
};

/// The estimate for replicas of `config` on `devices`. With `run` (training), per replica
/// parameters, a gradient (without the shortlisted output layer's rows unless sync writes
/// them) and the optimiser's moments (two for Adam, one for momentum; the shortlisted output
/// layer's by its own optimiser), a CPU replica's label index, and batch x chunk scoring
/// buffers; on the host the centre Z, Z_prev with momentum or EASGD, the dense merge's
/// average and scratch when a CUDA device or EASGD is merged, keep-best and moving-average
/// copies when enabled. Without `run` (evaluation, prediction, profiling) the replicas and
/// their scoring buffers only. Loaded data is not counted (it is resident before the check).
/// Saturates instead of overflowing.
MemoryEstimate estimate_replica_bytes(const ModelConfig& config,
                                      const std::vector<DeviceId>& devices,
                                      const RunFootprint* run = nullptr);

/// Makes one replica of `config` per id, in order, after checking estimate_replica_bytes()'s
/// host bytes against the memory available (throws MemoryBudgetExceeded naming the devices).
/// Each device is wrapped in the emulation decorator when its id carries a speed < 1, the
/// replicas in `faults` in the fault-injection decorator, and the shortlisted CPU replicas
/// that do not wait for their index builds share one label-index builder. `run`: see
/// estimate_replica_bytes(). `stop` (optional, e.g. set by a signal handler) abandons the
/// making: it is read before each replica and, on CPU replicas, before each 16 MiB block of
/// their buffers (kernels/cpu/api.h), so that a model of GBs stops within a fraction of a
/// second; then the replicas made so far are freed and Error "...: interrupted" is thrown.
/// A `config` with automatic fields (ModelConfig's defaults) is resolved first, by
/// resolve_model() with the memory available, as `hetsgd train` resolves it.
std::vector<std::unique_ptr<Device>> make_replicas(const std::vector<DeviceId>& ids,
                                                   const ModelConfig& config,
                                                   const DeviceOptions& options,
                                                   const std::vector<InjectedFault>& faults = {},
                                                   const RunFootprint* run = nullptr,
                                                   const std::atomic<bool>* stop = nullptr);

/// Approximate top-k with a CPU replica's label index (`hetsgd predict --ann`, see
/// kernels/cpu/api.h). Throws InvalidArgument when `device` is not a CPU replica.
float predict_topk_ann(Device& device, const CsrBatch& batch, int k, col_t* labels, float* scores);

/// Labels of largest bias that every row of an indexed final evaluation scores exactly: the
/// label prior the model learned, which clusters of label vectors split up.
inline constexpr index_t kIndexedEvalHead = 4096;
/// Clusters each row probes at search level 0 of an indexed final evaluation; each level
/// doubles them, up to kIndexedEvalLevels levels.
inline constexpr int kIndexedEvalProbes = 16;
inline constexpr int kIndexedEvalLevels = 3;

/// Approximate top-k of a replica's model at search `level`, as TrainCallbacks::indexed_topk
/// wants it (kernels/cpu/api.h predict_topk_clustered: the kIndexedEvalHead labels of largest
/// bias and the labels of each row's kIndexedEvalProbes << level best k-means label clusters,
/// built from the evaluated weights, all scored exactly); false when the replica is not a CPU
/// device or `level` is not below kIndexedEvalLevels.
bool indexed_topk(Device& device, const CsrBatch& batch, int k, int level, col_t* labels,
                  float* scores);

}  // namespace hetsgd
