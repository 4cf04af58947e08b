// The CPU device's approximate top-k (ApproxScorer) and the CPU backend's entry points beside
// the device (cpu/api.h): the label index's memory estimate and its sharing.
#include <vector>

#include "core/error.h"
#include "kernels/cpu/api.h"
#include "kernels/cpu/cpu_device.h"

namespace hetsgd::cpu {

float CpuDevice::predict_topk_ann(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  HETSGD_CHECK(k >= 1, "top-k needs k >= 1, got " << k);
  arena_.execute([&] {
    forward(batch);
    scorer_.ann_topk(params_, scratch_.acts.back().data(), batch.rows(), k, labels, scores);
  });
  return 0.0f;
}

bool CpuDevice::predict_topk_clustered(const CsrBatch& batch, int k, index_t head, int probes,
                                       col_t* labels, float* scores) {
  HETSGD_CHECK(k >= 1, "top-k needs k >= 1, got " << k);
  arena_.execute([&] {
    forward(batch);
    scorer_.clustered_topk(params_, scratch_.acts.back().data(), batch.rows(), k, head, probes,
                           shortlist(), labels, scores);
  });
  return true;
}

std::size_t label_index_bytes(const ModelConfig& config, int replicas) {
  if (!config.uses_shortlist() || config.shortlist.hard_negatives == 0 || replicas < 1) return 0;
  const index_t hidden = config.hidden.back();
  const std::size_t index =
      LabelIndex::estimate_bytes(config.num_labels, hidden, config.shortlist.ann_m);
  // One being built holds its insertion locks besides the graph; its codes are in the graph.
  const std::size_t building = index + LabelIndex::build_extra_bytes(config.num_labels);
  const auto k = static_cast<std::size_t>(replicas);
  // A shared builder: each replica's index in use, the newest not yet swapped in, the build.
  if (k > 1 && !config.shortlist.wait_for_index) return (k + 1) * index + building;
  return k * (index + building);
}

float predict_topk_ann(Device& device, const CsrBatch& batch, int k, col_t* labels, float* scores) {
  auto* cpu = dynamic_cast<CpuDevice*>(&device.backend());
  HETSGD_CHECK(cpu != nullptr, "approximate top-k runs on a CPU device, not " << device.name());
  return cpu->predict_topk_ann(batch, k, labels, scores);
}

bool predict_topk_clustered(Device& device, const CsrBatch& batch, int k, index_t head, int probes,
                            col_t* labels, float* scores) {
  auto* cpu = dynamic_cast<CpuDevice*>(&device.backend());
  return cpu != nullptr && cpu->predict_topk_clustered(batch, k, head, probes, labels, scores);
}

void share_label_index(const std::vector<Device*>& devices) {
  std::shared_ptr<IndexBuilder> shared;
  const ModelConfig* first = nullptr;
  for (Device* d : devices) {
    auto* cpu = dynamic_cast<CpuDevice*>(&d->backend());
    Shortlist* s = cpu != nullptr ? cpu->shortlist() : nullptr;
    if (s == nullptr || !s->can_share_builder()) continue;
    if (shared == nullptr) {
      shared = s->builder();
      first = &cpu->config();
    } else if (cpu->config().num_labels == first->num_labels &&
               cpu->config().hidden == first->hidden) {
      s->share_builder(shared);
    }
  }
}

}  // namespace hetsgd::cpu
