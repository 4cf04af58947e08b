#include "kernels/replicas.h"

#include <algorithm>

#include "core/emulated_device.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "kernels/cpu/api.h"
#include "kernels/registry.h"

namespace hetsgd {
namespace {

std::string join(const std::vector<DeviceId>& ids) {
  std::string s;
  for (const DeviceId& id : ids) s += (s.empty() ? "" : ",") + id.str();
  return s;
}

}  // namespace

InjectedFault parse_injected_fault(const std::string& text, std::size_t devices) {
  const auto colon = text.find(':');
  const std::string index = text.substr(0, colon);
  HETSGD_CHECK(colon != std::string::npos && !index.empty() &&
                   index.find_first_not_of("0123456789") == std::string::npos && index.size() < 6 &&
                   std::stoul(index) < devices,
               "--inject-fault '" << text << "': expected I:SPEC with device index I in [0, "
                                  << devices << ")");
  InjectedFault f;
  f.device = std::stoul(index);
  f.spec = parse_fault_spec(text.substr(colon + 1));
  return f;
}

std::uint64_t MemoryEstimate::host() const {
  return saturating_add(saturating_add(model, optimizer), buffers);
}

MemoryEstimate estimate_replica_bytes(const ModelConfig& config,
                                      const std::vector<DeviceId>& devices,
                                      const RunFootprint* run) {
  const RunFootprint defaults;
  const RunFootprint& o = run != nullptr ? *run : defaults;
  // Widths are range-checked before this is called, but their product may still be huge:
  // every step saturates, so an absurd shape is refused rather than wrapped to a small number.
  std::uint64_t params = 0;
  const std::vector<index_t> w = config.widths();
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    const auto in = static_cast<std::uint64_t>(w[i]), out = static_cast<std::uint64_t>(w[i + 1]);
    params = saturating_add(params, saturating_add(saturating_mul(in, out), out));
  }
  const std::uint64_t bytes = saturating_mul(params, sizeof(float));
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
  const std::uint64_t grad = shortlisted && !o.dense_output_gradient ? bytes - out_bytes : bytes;
  const std::uint64_t state =
      saturating_add(grad, saturating_add(saturating_mul(bytes - out_bytes, moments),
                                          saturating_mul(out_bytes, out_moments)));
  const auto rows = static_cast<std::uint64_t>(o.batch_rows);
  const auto chunk = static_cast<std::uint64_t>(
      std::min<index_t>(config.num_labels, std::max<index_t>(1, config.shortlist.score_chunk)));
  const std::uint64_t scoring = saturating_mul(saturating_mul(rows, chunk), 2 * sizeof(float));
  std::uint64_t cpus = 0, gpus = 0;
  for (const DeviceId& id : devices) ++(id.kind == DeviceKind::kCpu ? cpus : gpus);

  MemoryEstimate m;
  m.gpu = saturating_mul(saturating_add(saturating_add(bytes, state), scoring), gpus);
  m.model = saturating_mul(bytes, cpus);
  // The CPU replicas' label indexes, counted once for all of them (they may share a builder).
  m.optimizer = saturating_add(saturating_mul(state, cpus),
                               cpu::label_index_bytes(config, static_cast<int>(cpus)));
  m.buffers = saturating_mul(scoring, cpus);
  if (run == nullptr) return m;
  // The centre Z; Z_prev with block momentum (and for EASGD's exchange); the dense merge's
  // average and scratch when a device cannot list its rows (CUDA: host merges stream rows
  // otherwise); keep-best (unless it is kept in a file) and --ema copies.
  m.model = saturating_add(m.model, bytes);
  const std::uint64_t copies = (o.centre_history ? 1 : 0) + (gpus > 0 || o.elastic ? 2 : 0) +
                               (o.best_in_memory ? 1 : 0) + (o.average ? 1 : 0);
  m.buffers = saturating_add(m.buffers, saturating_mul(bytes, copies));
  return m;
}

std::vector<std::unique_ptr<Device>> make_replicas(const std::vector<DeviceId>& ids,
                                                   const ModelConfig& config,
                                                   const DeviceOptions& options,
                                                   const std::vector<InjectedFault>& faults,
                                                   const RunFootprint* run,
                                                   const std::atomic<bool>* stop) {
  HETSGD_CHECK(!ids.empty(), "make_replicas: no devices");
  // The automatic fields resolved once for every replica, as the command line resolves them
  // (memory read before any replica takes its share); one output-layer objective on every
  // device of a run (a mixed CPU+GPU run scores fully).
  const ModelConfig one_objective = resolve_output_layer(
      resolve_model(config, static_cast<double>(available_memory_bytes())), ids);
  const MemoryEstimate need = estimate_replica_bytes(one_objective, ids, run);
  check_memory(need.host(), std::string(run != nullptr ? "training" : "a replica of") +
                                " this model on " + join(ids));
  std::vector<std::unique_ptr<Device>> devs;
  for (const DeviceId& id : ids) {
    if (stop != nullptr && stop->load())
      throw Error("making the replica on " + id.str() + ": interrupted");
    // A CPU replica reads `stop` while its buffers become resident (most of its set-up time);
    // wrapped as make_device() (kernels/registry.cpp) wraps it.
    devs.push_back(id.kind == DeviceKind::kCpu
                       ? make_emulated_device(
                             cpu::make_device(id.ordinal, one_objective, options, stop), id.speed)
                       : make_device(id, one_objective, options));
  }
  std::vector<Device*> raw;
  for (auto& d : devs) raw.push_back(d.get());
  cpu::share_label_index(raw);  // one index build at a time for the CPU replicas
  for (const InjectedFault& f : faults) {
    HETSGD_CHECK(f.device < devs.size(),
                 "injected fault for device " << f.device << " of " << devs.size());
    devs[f.device] = make_faulty_device(std::move(devs[f.device]), f.spec);
  }
  return devs;
}

float predict_topk_ann(Device& device, const CsrBatch& batch, int k, col_t* labels, float* scores) {
  return cpu::predict_topk_ann(device, batch, k, labels, scores);
}

bool indexed_topk(Device& device, const CsrBatch& batch, int k, int level, col_t* labels,
                  float* scores) {
  if (level < 0 || level >= kIndexedEvalLevels) return false;
  return cpu::predict_topk_clustered(device, batch, k, kIndexedEvalHead,
                                     kIndexedEvalProbes << level, labels, scores);
}

}  // namespace hetsgd
