#include "kernels/cpu/approx_scorer.h"

#include <cblas.h>
#include <math.h>
#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <numeric>

#include "core/math/topk.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
// Rows per task: the head's weights (2 MB at 4,096 labels and hidden 128) are read once per
// task, so a task takes enough rows for its sgemm to run near the GEMM peak.
constexpr index_t kRowsPerTask = 128;
constexpr index_t kHeadTile = 4096;  // head labels scored at a time (2 MB of scores per task)

// Pads each of `rows` top-k lists past its `size` entries with (-1, -inf).
void pad_lists(index_t rows, int k, const int* size, col_t* labels, float* scores) {
  for (index_t r = 0; r < rows; ++r) {
    for (int i = size[r]; i < k; ++i) {
      scores[r * k + i] = -INFINITY;
      labels[r * k + i] = -1;
    }
  }
}
}  // namespace

ApproxScorer::ApproxScorer(const ModelConfig& config, const ParamLayout& layout, int threads)
    : config_(config), out_(layout.layers().back()), threads_(threads) {}

void ApproxScorer::sync(const VersionedParams& params) {
  if (params.version() == version_) return;
  ann_.reset();
  head_.reset();
  clusters_.reset();
  version_ = params.version();
}

void ApproxScorer::ann_topk(const VersionedParams& params, const float* h, index_t rows, int k,
                            col_t* labels, float* scores) {
  sync(params);
  const float* w = params.data() + out_.w_offset;
  const float* b = params.data() + out_.b_offset;
  if (!ann_) {
    ann_ = std::make_unique<Shortlist>(config_, threads_);
    ann_->build_now(w, b);
  }
  const LabelIndex& index = ann_->index();
  const index_t hid = out_.in;
  for_blocks(rows, kRowsPerTask, [&](index_t r0, index_t r1) {
    std::vector<col_t> ids;
    std::vector<std::uint8_t> scratch;
    for (index_t r = r0; r < r1; ++r) {
      index.search(h + r * hid, k, &ids, &scratch);
      // The index's labels, rescored exactly.
      float* rs = scores + r * k;
      col_t* ri = labels + r * k;
      int n = 0;
      for (col_t j : ids) {
        const float zj = b[j] + cblas_sdot(static_cast<int>(hid), h + r * hid, 1,
                                           w + static_cast<std::size_t>(j) * hid, 1);
        math::topk_insert(rs, ri, k, n, zj, j);
      }
      for (int i = n; i < k; ++i) {
        rs[i] = -INFINITY;
        ri[i] = -1;
      }
    }
  });
}

void ApproxScorer::clustered_topk(const VersionedParams& params, const float* h, index_t rows,
                                  int k, index_t head, int probes, Shortlist* training,
                                  col_t* labels, float* scores) {
  sync(params);
  const float* w = params.data() + out_.w_offset;
  const float* b = params.data() + out_.b_offset;
  if (clusters_ == nullptr) {
    // The clustered search serves the final evaluation, which does not use the training's
    // label index: that index, and a rebuild still running at the end of training, are
    // released first so that their memory (about 180 MB each at 670,091 labels) does not add
    // to the search's. Training that goes on builds a new one at its next rebuild step.
    if (training != nullptr) training->release_index();
    auto built = std::make_unique<LabelClusters>();
    built->build(w, b, config_.num_labels, out_.in, LabelClusterParams{});
    clusters_ = std::move(built);
  }
  if (head > 0) prepare_head(w, b, head);
  std::vector<int> size(static_cast<std::size_t>(rows), 0);
  if (head > 0) score_head(h, rows, k, labels, scores, size.data());
  clusters_->search(h, rows, w, b, k, probes, head > 0 ? head_->member.data() : nullptr, scores,
                    labels, size.data());
  pad_lists(rows, k, size.data(), labels, scores);
}

void ApproxScorer::prepare_head(const float* w, const float* b, index_t count) {
  count = std::min(count, config_.num_labels);
  if (head_ != nullptr && static_cast<index_t>(head_->ids.size()) == count) return;
  head_ = std::make_unique<HeadLabels>();
  std::vector<col_t>& ids = head_->ids;
  ids.resize(static_cast<std::size_t>(config_.num_labels));
  std::iota(ids.begin(), ids.end(), col_t{0});
  // Largest bias first, ties by id, so the set does not depend on the sort's implementation.
  std::nth_element(ids.begin(), ids.begin() + count, ids.end(),
                   [&](col_t x, col_t y) { return b[x] > b[y] || (b[x] == b[y] && x < y); });
  ids.resize(static_cast<std::size_t>(count));
  head_->member.assign(static_cast<std::size_t>(config_.num_labels), 0);
  head_->w.resize(static_cast<std::size_t>(count * out_.in));
  head_->b.resize(static_cast<std::size_t>(count));
  for (index_t i = 0; i < count; ++i) {
    const auto j = static_cast<std::size_t>(ids[static_cast<std::size_t>(i)]);
    head_->member[j] = 1;
    head_->b[static_cast<std::size_t>(i)] = b[j];
    std::copy(w + j * out_.in, w + (j + 1) * out_.in,
              head_->w.data() + static_cast<std::size_t>(i * out_.in));
  }
}

void ApproxScorer::score_head(const float* h, index_t rows, int k, col_t* labels, float* scores,
                              int* size) const {
  const index_t hid = out_.in;
  const auto f = static_cast<index_t>(head_->ids.size());
  // Each thread's tile of scores, allocated once per call rather than per task.
  tbb::enumerable_thread_specific<std::vector<float>> tiles(
      static_cast<std::size_t>(kRowsPerTask * std::min(kHeadTile, f)));
  for_blocks(rows, kRowsPerTask, [&](index_t r0, index_t r1) {
    // A tile at a time: one sgemm, the tile's top-k per row (vec_ops), merged.
    std::vector<float>& z = tiles.local();
    std::vector<float> tile_scores(static_cast<std::size_t>(k));
    std::vector<col_t> tile_ids(static_cast<std::size_t>(k));
    for (index_t t0 = 0; t0 < f; t0 += kHeadTile) {
      const index_t n = std::min(kHeadTile, f - t0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(r1 - r0),
                  static_cast<int>(n), static_cast<int>(hid), 1.0f, h + r0 * hid,
                  static_cast<int>(hid), head_->w.data() + t0 * hid, static_cast<int>(hid), 0.0f,
                  z.data(), static_cast<int>(n));
      for (index_t r = r0; r < r1; ++r) {
        float* zr = z.data() + (r - r0) * n;
        for (index_t i = 0; i < n; ++i) zr[i] += head_->b[static_cast<std::size_t>(t0 + i)];
        vec::topk_row(zr, n, k, tile_scores.data(), tile_ids.data());
        for (int i = 0; i < k && tile_ids[i] >= 0; ++i) {
          math::topk_insert(scores + r * k, labels + r * k, k, size[r], tile_scores[i],
                            head_->ids[static_cast<std::size_t>(t0 + tile_ids[i])]);
        }
      }
    }
  });
}

}  // namespace hetsgd::cpu
