#include "kernels/cpu/label_index.h"

// hnswlib 0.6.2's SSE search loop prefetches through datal[j + 1] after a link list's last
// entry, a heap read one element past the list (AddressSanitizer reports it in addPoint and
// searchKnn). Without its manual vectorisation the loop does not read ahead. Its own SIMD
// distances are not used anyway: the space below brings its own.
#define NO_MANUAL_VECTORIZATION
#include <hnswlib/hnswlib.h>

#include <math.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/resident.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
constexpr std::size_t kLevelSeed = 100;  // hnswlib's default level-generator seed, fixed
constexpr index_t kCancelCheck = 1024;   // insertions between looks at the cancel flag

/// hnswlib's inner-product convention (distance = 1 - <a, b>) over coded vectors.
class CodedInnerProductSpace final : public hnswlib::SpaceInterface<float> {
 public:
  explicit CodedInnerProductSpace(index_t width) : width_(width) {}
  std::size_t get_data_size() override { return LabelIndex::code_bytes(width_); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &distance; }
  void* get_dist_func_param() override { return &width_; }

 private:
  static float distance(const void* a, const void* b, const void* param) {
    const index_t width = *static_cast<const index_t*>(param);
    float sa = 0.0f, sb = 0.0f;
    std::memcpy(&sa, a, sizeof sa);
    std::memcpy(&sb, b, sizeof sb);
    const auto* ca = static_cast<const std::int8_t*>(a) + sizeof(float);
    const auto* cb = static_cast<const std::int8_t*>(b) + sizeof(float);
    // The int32 sum is exact (|dot| <= width * 127^2) and the float arithmetic is outside the
    // ISA-dispatched kernel, so a distance has the same bits on every machine.
    return 1.0f - sa * sb * static_cast<float>(vec::dot_i8(ca, cb, width));
  }

  index_t width_;
};

}  // namespace

struct LabelIndex::Impl {
  Impl(index_t num_labels, index_t width, const LabelIndexParams& params)
      : space(width),
        graph(std::make_unique<hnswlib::HierarchicalNSW<float>>(
            &space, static_cast<std::size_t>(num_labels), static_cast<std::size_t>(params.m),
            static_cast<std::size_t>(std::max(1, params.ef_construction)), kLevelSeed)),
        points(num_labels),
        hidden(width - 1),
        stride(code_bytes(width)),
        ef_search(std::max(1, params.ef_search)) {}
  /// Inserts codes 0..points in order, from `codes` or, when null, from their staged places.
  bool insert(const std::uint8_t* codes, const std::atomic<bool>* cancel, const col_t* ids);

  CodedInnerProductSpace space;  // before graph, which keeps its address
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
  index_t points;
  index_t hidden;
  std::size_t stride;
  int ef_search;
};

bool LabelIndex::Impl::insert(const std::uint8_t* codes, const std::atomic<bool>* cancel,
                              const col_t* ids) {
  hnswlib::HierarchicalNSW<float>& g = *graph;
  std::vector<std::uint8_t> code(stride);
  for (index_t j = 0; j < points; ++j) {
    if (j % kCancelCheck == 0) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
      // hnswlib hashes every label to its record, to update a label inserted again; each
      // label here is inserted once, and the hash (a 32-byte node and a bucket per label,
      // 40 bytes measured, 27 MB at 670,091 labels) is emptied as the build goes.
      g.label_lookup_.clear();
    }
    const std::uint8_t* src = code.data();
    if (codes != nullptr) {
      src = codes + static_cast<std::size_t>(j) * stride;
    } else {
      // addPoint clears record j before it copies the code in: take the staged code out.
      std::memcpy(code.data(), g.getDataByInternalId(static_cast<hnswlib::tableint>(j)), stride);
    }
    const hnswlib::tableint at =
        g.addPoint(src, static_cast<std::size_t>(ids != nullptr ? ids[j] : j), -1);
    HETSGD_CHECK(at == static_cast<hnswlib::tableint>(j),
                 "label index: label " << (ids != nullptr ? ids[j] : j) << " inserted twice");
  }
  g.setEf(static_cast<std::size_t>(ef_search));
  // What only insertion uses: a lock per label (40 bytes each, 27 MB at 670,091 labels), 65,536
  // update locks (2.6 MB) and the label hash. searchKnn reads none of them, so an index in use
  // (which lives beside the next one being built) keeps only the graph and its codes.
  std::vector<std::mutex>().swap(g.link_list_locks_);
  std::vector<std::mutex>().swap(g.link_list_update_locks_);
  std::unordered_map<hnswlib::labeltype, hnswlib::tableint>().swap(g.label_lookup_);
  return true;
}

LabelIndex::LabelIndex() = default;
LabelIndex::~LabelIndex() = default;

void LabelIndex::encode(const float* x, index_t width, std::uint8_t* out) {
  float amax = 0.0f;
  for (index_t i = 0; i < width; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax > 0.0f && std::isfinite(amax) ? amax / 127.0f : 1.0f;
  std::memcpy(out, &scale, sizeof scale);
  auto* codes = reinterpret_cast<std::int8_t*>(out + sizeof scale);
  // The padding is zero; distances read only `width` codes anyway.
  std::fill(codes + width, reinterpret_cast<std::int8_t*>(out + code_bytes(width)), 0);
  for (index_t i = 0; i < width; ++i) {
    const float q = std::nearbyint(x[i] / scale);
    // NaN (a diverged model) codes as 0 rather than as undefined behaviour.
    codes[i] = static_cast<std::int8_t>(q >= -127.0f && q <= 127.0f ? q : 0.0f);
  }
}

bool LabelIndex::build(const std::uint8_t* codes, index_t num_labels, index_t hidden,
                       const LabelIndexParams& params, const std::atomic<bool>* cancel,
                       const col_t* ids) {
  HETSGD_CHECK(codes != nullptr, "label index: no codes to build from");
  stage(num_labels, hidden, params);
  std::unique_ptr<Impl> impl = std::move(impl_);
  if (!impl->insert(codes, cancel, ids)) return false;
  impl_ = std::move(impl);
  num_labels_ = num_labels;
  hidden_ = hidden;
  return true;
}

void LabelIndex::stage(index_t num_labels, index_t hidden, const LabelIndexParams& params) {
  HETSGD_CHECK(num_labels >= 1, "label index over " << num_labels << " labels (need >= 1)");
  HETSGD_CHECK(hidden >= 1 && hidden < (1 << 17),
               "label index of width " << hidden << " (need 1 <= width < 131072)");
  HETSGD_CHECK(params.m >= 2, "label index M " << params.m << " < 2");
  impl_.reset();
  num_labels_ = 0;
  hidden_ = 0;
  impl_ = std::make_unique<Impl>(num_labels, hidden + 1, params);
  // The graph's level-0 records (links and codes, all written as the codes are staged and
  // inserted), mapped in one call (core/resident.h) rather than a fault per page.
  const hnswlib::HierarchicalNSW<float>& g = *impl_->graph;
  make_resident(g.data_level0_memory_, g.max_elements_ * g.size_data_per_element_);
}

std::uint8_t* LabelIndex::staged_code(index_t j) {
  HETSGD_CHECK(impl_ != nullptr && !ready() && j >= 0 && j < impl_->points,
               "label index: no staged code " << j);
  return reinterpret_cast<std::uint8_t*>(
      impl_->graph->getDataByInternalId(static_cast<hnswlib::tableint>(j)));
}

bool LabelIndex::build_staged(const std::atomic<bool>* cancel, const col_t* ids) {
  HETSGD_CHECK(impl_ != nullptr && !ready(), "label index: build_staged() without stage()");
  std::unique_ptr<Impl> impl = std::move(impl_);
  if (!impl->insert(nullptr, cancel, ids)) return false;
  num_labels_ = impl->points;
  hidden_ = impl->hidden;
  impl_ = std::move(impl);
  return true;
}

void LabelIndex::build(const float* vectors, index_t num_labels, index_t hidden,
                       const LabelIndexParams& params) {
  HETSGD_CHECK(num_labels >= 1 && hidden >= 1,
               "label index over " << num_labels << " labels of width " << hidden);
  const index_t width = hidden + 1;
  const std::size_t stride = code_bytes(width);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(num_labels) * stride);
  for (index_t j = 0; j < num_labels; ++j) {
    encode(vectors + j * width, width, codes.data() + static_cast<std::size_t>(j) * stride);
  }
  build(codes.data(), num_labels, hidden, params);
}

void LabelIndex::search(const float* h, int k, std::vector<col_t>* ids,
                        std::vector<std::uint8_t>* scratch) const {
  ids->clear();
  if (!ready() || k <= 0) return;
  // Query [h, 1], coded like the labels: its scale is one positive factor on every distance,
  // so it does not change the order.
  thread_local std::vector<float> query;
  query.assign(h, h + hidden_);
  query.push_back(1.0f);
  scratch->resize(code_bytes(hidden_ + 1));
  encode(query.data(), hidden_ + 1, scratch->data());
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
  return g.max_elements_ * (g.size_data_per_element_ + sizeof(void*) + sizeof(int)) +
         g.link_list_locks_.size() * sizeof(std::mutex);
}

std::size_t LabelIndex::estimate_bytes(index_t num_labels, index_t hidden, int m) {
  // hnswlib's level-0 record (2M links and a count, the code, the label), the per-label
  // upper-level pointer and level, the upper-level lists of the 1/M of the labels above level
  // 0 (M links and a count, and malloc's 16 bytes), and a visited list (2 bytes per label)
  // for each of about two threads searching at once.
  const auto n = static_cast<std::size_t>(std::max<index_t>(0, num_labels));
  const auto links = static_cast<std::size_t>(std::max(2, m));
  const std::size_t level0 =
      (2 * links + 1) * sizeof(std::uint32_t) + code_bytes(hidden + 1) + sizeof(std::size_t);
  const std::size_t upper = ((links + 1) * sizeof(std::uint32_t) + 16) / links;
  return n * (level0 + sizeof(void*) + sizeof(int) + upper + 2 * sizeof(std::uint16_t));
}

std::size_t LabelIndex::build_extra_bytes(index_t num_labels) {
  constexpr std::size_t kUpdateLocks = 65536;  // hnswlib's max_update_element_locks
  return (static_cast<std::size_t>(std::max<index_t>(0, num_labels)) + kUpdateLocks) *
         sizeof(std::mutex);
}

}  // namespace hetsgd::cpu
