// Approximate top-k of the CPU device (`hetsgd predict --ann`): the label index over the output
// layer, each row's neighbours rescored exactly.
#include <math.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/math/topk.h"
#include "kernels/cpu/api.h"
#include "kernels/cpu/cpu_device.h"
#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowsPerTask = 8;  // rows searched per task
}  // namespace

float CpuDevice::predict_topk_ann(const CsrBatch& batch, int k, col_t* labels, float* scores) {
  HETSGD_CHECK(k >= 1, "top-k needs k >= 1, got " << k);
  arena_.execute([&] {
    const LayerSlice& out = layout_.layers().back();
    const float* w = params_.data() + out.w_offset;
    const float* b = params_.data() + out.b_offset;
    if (!ann_) {
      ann_ = std::make_unique<Shortlist>(config_);
      ann_->build_now(w, b);
    }
    forward(batch);
    const float* h = scratch_.acts.back().data();
    const LabelIndex& index = ann_->index();
    for_blocks(batch.rows(), kRowsPerTask, [&](index_t r0, index_t r1) {
      std::vector<col_t> ids;
      std::vector<std::uint8_t> scratch;
      for (index_t r = r0; r < r1; ++r) {
        index.search(h + r * out.in, k, &ids, &scratch);
        // Rescore exactly, then rank with the shared top-k order.
        int size = 0;
        float* rs = scores + r * k;
        col_t* ri = labels + r * k;
        for (col_t j : ids) {
          float z = b[j];
          for (index_t i = 0; i < out.in; ++i) z += h[r * out.in + i] * w[j * out.in + i];
          math::topk_insert(rs, ri, k, size, z, j);
        }
        for (int i = size; i < k; ++i) {
          rs[i] = -INFINITY;
          ri[i] = -1;
        }
      }
    });
  });
  return 0.0f;
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
