// estimate_replica_bytes(): what one CudaDevice allocates, from the shapes alone (every build).
#include <algorithm>

#include "core/memory_budget.h"
#include "core/param_layout.h"
#include "kernels/cuda/api.h"

namespace hetsgd::cuda {

std::uint64_t estimate_replica_bytes(const ModelConfig& config, index_t batch_rows,
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
