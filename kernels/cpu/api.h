/// \file kernels/cpu/api.h
/// The CPU backend: a replica in host memory, trained with oneTBB + single-threaded BLAS.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"

namespace hetsgd::cpu {

/// Makes CPU worker `ordinal`, with its own oneTBB arena of `options.threads` threads
/// (0 = all hardware threads). Dense GEMMs run single-threaded BLAS inside that arena, so
/// several CPU workers in one process do not oversubscribe the cores. `stop` (optional): when
/// it is set while the replica's buffers are made resident (seconds for a model of GBs), the
/// construction stops within a 16 MiB block of writes per core and throws Error "...: interrupted".
std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                    const DeviceOptions& options,
                                    const std::atomic<bool>* stop = nullptr);

/// Approximate top-k of a CPU device's model with its label index (HNSW over the output
/// layer, built on first use and after any write of the weights; see
/// CpuDevice::predict_topk_ann). `labels` / `scores` are
/// rows*k arrays like Device::predict_topk(). Throws InvalidArgument when `device` is not a
/// CPU device.
float predict_topk_ann(Device& device, const CsrBatch& batch, int k, col_t* labels, float* scores);

/// Approximate top-k of a CPU device's model for an evaluation too large to score exactly
/// (see CpuDevice::predict_topk_clustered): each row's best among the `head` labels of largest
/// bias and the labels of its `probes` best k-means label clusters, scored exactly. Returns
/// false, writing nothing, when `device` is not a CPU device.
bool predict_topk_clustered(Device& device, const CsrBatch& batch, int k, index_t head, int probes,
                            col_t* labels, float* scores);

/// Host bytes `replicas` shortlisted CPU replicas of `config` in one process hold for their
/// label indexes at most (0 without hard negatives or without the shortlist). Each replica
/// holds the index in use and, while it builds, the next one with its insertion locks (the
/// codes are built in place). Replicas that share one builder (share_label_index: not
/// wait_for_index) hold one build between them: the index each has in use (at most
/// `replicas` of them, mostly the same one), the builder's newest and the one being built.
std::size_t label_index_bytes(const ModelConfig& config, int replicas = 1);

/// Makes the shortlisted CPU replicas among `devices` (emulated ones included) that schedule
/// their index builds by cost (no `--index-wait`, not `--deterministic`) share one index
/// builder: one build at a time serves them all, each installing the newest at its own
/// install steps. Other devices are left alone.
void share_label_index(const std::vector<Device*>& devices);

/// The BLAS kernel family the CPU backend runs (OpenBLAS core name, e.g. "SkylakeX"), for
/// build and device reports. Configures BLAS on first use, like make_device().
std::string blas_core_name();

}  // namespace hetsgd::cpu
