#include "apps/memory_estimate.h"

#include <algorithm>
#include <cstdio>

#include "core/memory_budget.h"
#include "core/param_layout.h"
#include "kernels/cpu/api.h"

namespace hetsgd::app {
namespace {

std::string gigabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

}  // namespace

std::uint64_t MemoryEstimate::total() const {
  return saturating_add(saturating_add(model, optimizer), buffers);
}

MemoryEstimate estimate_training_memory(const ModelConfig& config,
                                        const std::vector<DeviceId>& devices,
                                        const TrainOptions& options) {
  // Widths are range-checked before this is called, but their product may still be huge:
  // every step saturates, so an absurd shape is refused rather than wrapped to a small number.
  std::uint64_t params = 0;
  const std::vector<index_t> w = config.widths();
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    const auto in = static_cast<std::uint64_t>(w[i]), out = static_cast<std::uint64_t>(w[i + 1]);
    params = saturating_add(params, saturating_add(saturating_mul(in, out), out));
  }
  const std::uint64_t bytes = saturating_mul(params, sizeof(float));
  const std::uint64_t k = std::max<std::size_t>(1, devices.size());
  const std::uint64_t moments = config.optimizer.kind == OptimizerKind::kAdam ? 2
                                : config.optimizer.momentum > 0.0f            ? 1
                                                                              : 0;
  // The shortlisted output layer keeps moments only with its own Adam (plain SGD has none),
  // and its gradient is row-sparse: a replica that trains with train_step() (not sync)
  // never writes the output rows of its dense gradient buffer.
  const bool shortlisted = config.uses_shortlist();
  const auto last = static_cast<std::uint64_t>(config.hidden.back());
  const auto labels = static_cast<std::uint64_t>(config.num_labels);
  const std::uint64_t out_bytes =
      saturating_mul(saturating_add(saturating_mul(last, labels), labels), sizeof(float));
  const std::uint64_t out_moments =
      !shortlisted ? moments : (config.shortlist.optimizer == OptimizerKind::kAdam ? 2 : 0);
  const std::uint64_t grad = shortlisted && options.algo != Algo::kSync ? bytes - out_bytes : bytes;
  const std::uint64_t per_replica =
      saturating_add(grad, saturating_add(saturating_mul(bytes - out_bytes, moments),
                                          saturating_mul(out_bytes, out_moments)));
  bool any_cuda = false;
  int cpus = 0;
  for (const DeviceId& id : devices) {
    if (id.kind == DeviceKind::kCpu) {
      ++cpus;
    } else {
      any_cuda = true;
    }
  }
  MemoryEstimate m;
  // Host centre Z next to the replicas (the GPU replicas' host copies are the staging below).
  m.model = saturating_mul(bytes, k + 1);
  // The CPU replicas' label indexes, counted once for all of them (they may share a builder).
  m.optimizer =
      saturating_add(saturating_mul(per_replica, k), cpu::label_index_bytes(config, cpus));
  // Z_prev with block momentum (and for EASGD's exchange); the dense merge's average and
  // scratch when a device cannot list its rows (CUDA: host merges stream rows otherwise);
  // keep-best (unless it is kept in a file) and --ema copies.
  const bool history = options.mu != 0.0 || options.algo == Algo::kEasgd;
  const bool best_in_memory = options.keep_best && options.best_model_file.empty();
  std::uint64_t copies = (history ? 1 : 0) + (any_cuda || options.algo == Algo::kEasgd ? 2 : 0) +
                         (best_in_memory ? 1 : 0) + (options.ema > 0.0 ? 1 : 0);
  const auto rows = static_cast<std::uint64_t>(std::max(options.eval_batch, options.b_max));
  const auto chunk = static_cast<std::uint64_t>(
      std::min<index_t>(config.num_labels, std::max<index_t>(1, config.shortlist.score_chunk)));
  m.buffers = saturating_add(saturating_mul(bytes, copies),
                             saturating_mul(saturating_mul(rows, chunk), 2 * sizeof(float) * k));
  return m;
}

std::string describe(const MemoryEstimate& m) {
  return "model " + gigabytes(m.model) + ", optimiser " + gigabytes(m.optimizer) + ", buffers " +
         gigabytes(m.buffers) + " (total " + gigabytes(m.total()) + ")";
}

}  // namespace hetsgd::app
