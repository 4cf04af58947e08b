/// \file kernels/cuda/replica_estimate.h
/// estimate_replica_bytes(): what one CudaDevice allocates, from the shapes alone (part of the
/// CUDA seam, kernels/cuda/api.h). Inline, so that every build and the CUDA
/// module (which takes only the core library from the binary that loads it) have it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/memory_budget.h"
#include "core/model_config.h"
#include "core/param_layout.h"

namespace hetsgd::cuda {

/// Floats of logits an evaluation chunk may hold (64 MiB; CudaDevice::predict_topk).
inline constexpr index_t kScoreBudgetFloats = index_t{16} << 20;

/// Scratch the CUDA libraries take per replica (handles, cuBLAS workspace, cuSPARSE buffers,
/// the stream-ordered pool's slack): an allowance, not a measurement.
inline constexpr std::uint64_t kLibraryAllowanceBytes = std::uint64_t{256} << 20;

/// GPU memory one CUDA replica of `config` holds while training on batches of `batch_rows` rows
/// with `batch_nnz` feature nonzeros in all: parameters, gradient and optimiser moments
/// (ParamLayout::total() floats each), the batch x L logits, hidden activations and
/// backprop buffers, the first layer's compact gradient (nnz x hidden[0]), the staged batch,
/// the evaluation's scoring chunk and a fixed allowance for the cuBLAS/cuSPARSE handles and
/// workspaces. Device memory only: a CUDA replica's host RAM is its pinned staging, a few
/// batches. Saturates instead of overflowing.
inline std::uint64_t estimate_replica_bytes(const ModelConfig& config, index_t batch_rows,
                                            index_t batch_nnz) {
  const ParamLayout layout(config);
  const std::uint64_t f = sizeof(float);
  const std::uint64_t rows = static_cast<std::uint64_t>(std::max<index_t>(batch_rows, 1));
  const std::uint64_t nnz = static_cast<std::uint64_t>(std::max<index_t>(batch_nnz, 1));
  const std::uint64_t labels = static_cast<std::uint64_t>(config.num_labels);
  // Parameters and gradient, plus Adam's two moments or momentum's one (cuda_device.cu).
  std::uint64_t copies = 2;
  if (config.optimizer.kind == OptimizerKind::kAdam) {
    copies += 2;
  } else if (config.optimizer.momentum != 0.0f) {
    copies += 1;
  }
  std::uint64_t b = saturating_mul(saturating_mul(copies, layout.total()), f);
  // Per batch: logits (rows x L; the scoring chunk reuses this buffer), activations of every
  // hidden layer, two backprop buffers of the widest one, per-row losses.
  std::uint64_t hidden_sum = 0, widest = 0;
  for (index_t h : config.hidden) {
    hidden_sum += static_cast<std::uint64_t>(h);
    widest = std::max<std::uint64_t>(widest, static_cast<std::uint64_t>(h));
  }
  // Training keeps rows x L logits; evaluation scores into the same buffer in chunks of at
  // most kScoreBudgetFloats, so the larger of the two is what stays allocated.
  const std::uint64_t logits =
      std::max<std::uint64_t>(saturating_mul(rows, labels), kScoreBudgetFloats);
  b = saturating_add(
      b, saturating_mul(saturating_add(logits, rows * (hidden_sum + 2 * widest + 1)), f));
  // First layer: the compact gradient (nnz x hidden[0]) and the touched-row list (up to
  // every feature).
  const std::uint64_t h0 =
      config.hidden.empty() ? labels : static_cast<std::uint64_t>(config.hidden[0]);
  b = saturating_add(b, saturating_mul(saturating_mul(nnz, h0), f));
  // Staged ids, values and rows, distinct and compact ids, the scatter's sort and segments.
  b = saturating_add(b, saturating_mul(nnz, 5 * sizeof(col_t) + 6 * sizeof(int) + 2 * f));
  b = saturating_add(
      b, saturating_mul(static_cast<std::uint64_t>(config.num_features), sizeof(col_t)));
  return saturating_add(b, kLibraryAllowanceBytes);
}

}  // namespace hetsgd::cuda
