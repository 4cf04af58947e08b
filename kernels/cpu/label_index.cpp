#include "kernels/cpu/label_index.h"

// hnswlib 0.6.2's SSE search loop prefetches through datal[j + 1] after a link list's last
// entry, a heap read one element past the list (AddressSanitizer reports it in addPoint and
// searchKnn). Without its manual vectorisation the loop does not read ahead. The distances
// lose their SIMD path, but queries return candidates that are rescored exactly anyway.
#define NO_MANUAL_VECTORIZATION
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace hetsgd::cpu {
namespace {
constexpr std::size_t kLevelSeed = 100;  // hnswlib's default level-generator seed, fixed
}  // namespace

struct LabelIndex::Impl {
  explicit Impl(std::size_t dim) : space(dim) {}
  hnswlib::InnerProductSpace space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
};

LabelIndex::LabelIndex() = default;
LabelIndex::~LabelIndex() = default;

void LabelIndex::build(const float* vectors, index_t num_labels, index_t hidden,
                       const LabelIndexParams& params) {
  HETSGD_CHECK(num_labels >= 1, "label index over " << num_labels << " labels (need >= 1)");
  HETSGD_CHECK(hidden >= 1, "label index of width " << hidden << " (need >= 1)");
  HETSGD_CHECK(params.m >= 2, "label index M " << params.m << " < 2");
  const auto dim = static_cast<std::size_t>(hidden + 1);
  auto impl = std::make_unique<Impl>(dim);
  impl->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
      &impl->space, static_cast<std::size_t>(num_labels), static_cast<std::size_t>(params.m),
      static_cast<std::size_t>(params.ef_construction), kLevelSeed);
  for (index_t j = 0; j < num_labels; ++j) {
    impl->graph->addPoint(vectors + j * static_cast<index_t>(dim), static_cast<std::size_t>(j));
  }
  impl->graph->setEf(static_cast<std::size_t>(std::max(1, params.ef_search)));
  impl_ = std::move(impl);
  num_labels_ = num_labels;
  hidden_ = hidden;
}

void LabelIndex::search(const float* h, int k, std::vector<col_t>* ids,
                        std::vector<float>* scratch) const {
  ids->clear();
  if (!ready() || k <= 0) return;
  scratch->resize(static_cast<std::size_t>(hidden_ + 1));
  std::copy(h, h + hidden_, scratch->begin());
  (*scratch)[static_cast<std::size_t>(hidden_)] = 1.0f;
  const auto want = static_cast<std::size_t>(std::min<index_t>(k, num_labels_));
  auto heap = impl_->graph->searchKnn(scratch->data(), want);
  // The heap pops the largest distance (1 - inner product) first: fill from the back.
  ids->resize(heap.size());
  for (std::size_t i = heap.size(); i-- > 0;) {
    (*ids)[i] = static_cast<col_t>(heap.top().second);
    heap.pop();
  }
}

std::size_t LabelIndex::bytes() const {
  if (!ready()) return 0;
  const hnswlib::HierarchicalNSW<float>& g = *impl_->graph;
  return g.max_elements_ * g.size_data_per_element_ +
         g.max_elements_ * (sizeof(void*) + sizeof(int));
}

}  // namespace hetsgd::cpu
