#include "kernels/cpu/label_clusters.h"

#include <cblas.h>
#include <math.h>

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/math/topk.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
// Most clusters of the automatic size: assigning every label costs L x clusters x (h + 1)
// multiply-adds, about 1.4 TFLOP at 2.8M labels with 1.2 sqrt(L) (2,012) clusters; beyond this
// the build grows as L, and a probe scores more labels instead.
constexpr index_t kMaxAutoClusters = 1024;
// Labels assigned per task: a 1,024 x 1,024 block of centroid products is 4 MB.
constexpr index_t kAssignBlock = 1024;
// Query rows per task when probing, and per sgemm within a cluster (bounds its scores).
constexpr index_t kProbeRows = 256;
constexpr index_t kClusterRows = 512;
// (row, probe) pairs a search pass holds: their top-k lists are 40 bytes each at k = 5.
constexpr index_t kSlots = index_t{1} << 19;
// A probe ranks cluster c by what its best member may score, not by its centroid's score:
// q . x_j = q . c + q . (x_j - c), and the largest of n_c draws of q . (x_j - c) is about
// |q| r_c sqrt(2 ln n_c / d) (r_c the members' RMS distance to c, d their dimension). Scaled
// by this weight (chosen at 0.5, 0.75, 1 and 1.5 on a ten-epoch amazon-670k-shaped model, 64
// probes: recall@1/@5 against exact 0.940 / 0.890 without it, 0.968 / 0.925 with it).
constexpr float kSpreadWeight = 0.75f;

// A thread's buffers of one search pass, grown as needed and never shrunk: allocating (and
// zeroing) them per cluster cost more than the sgemm they feed.
struct SearchScratch {
  std::vector<float> z, wc, bc, hq, top_s;
  std::vector<col_t> top_c;
};
float* grown(std::vector<float>* v, index_t n) {
  if (v->size() < static_cast<std::size_t>(n)) v->resize(static_cast<std::size_t>(n));
  return v->data();
}

// x_j = [w_j, b_j] into out[0..hidden].
void gather_label(const float* w, const float* b, index_t hidden, col_t j, float* out) {
  const float* src = w + static_cast<std::size_t>(j) * hidden;
  std::copy(src, src + hidden, out);
  out[hidden] = b[j];
}

// Nearest centroid (squared Euclidean) of each of `n` vectors `x` [n x d]:
// argmax_c x . c - |c|^2 / 2, one sgemm per block.
void assign(const float* x, index_t n, const std::vector<float>& centroids, index_t clusters,
            index_t d, index_t* out) {
  std::vector<float> half_norm(static_cast<std::size_t>(clusters));
  for (index_t c = 0; c < clusters; ++c) {
    const float* cc = centroids.data() + c * d;
    half_norm[c] = 0.5f * cblas_sdot(static_cast<int>(d), cc, 1, cc, 1);
  }
  // Each thread's block of products, allocated once per call rather than per block.
  tbb::enumerable_thread_specific<std::vector<float>> products(
      static_cast<std::size_t>(std::min(n, kAssignBlock) * clusters));
  for_blocks(n, kAssignBlock, [&](index_t r0, index_t r1) {
    float* g = products.local().data();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(r1 - r0),
                static_cast<int>(clusters), static_cast<int>(d), 1.0f, x + r0 * d,
                static_cast<int>(d), centroids.data(), static_cast<int>(d), 0.0f, g,
                static_cast<int>(clusters));
    for (index_t r = r0; r < r1; ++r) {
      const float* gr = g + (r - r0) * clusters;
      index_t best = 0;
      float best_v = gr[0] - half_norm[0];
      for (index_t c = 1; c < clusters; ++c) {
        const float v = gr[c] - half_norm[c];
        if (v > best_v) {
          best_v = v;
          best = c;
        }
      }
      out[r] = best;
    }
  });
}

// Centroid c = mean of the vectors assigned to it; an empty cluster keeps its centroid.
void update_means(const float* x, index_t n, const index_t* a, index_t clusters, index_t d,
                  std::vector<float>* centroids) {
  std::vector<double> sum(static_cast<std::size_t>(clusters * d), 0.0);
  std::vector<index_t> count(static_cast<std::size_t>(clusters), 0);
  for (index_t i = 0; i < n; ++i) {
    double* s = sum.data() + a[i] * d;
    const float* xi = x + i * d;
    for (index_t t = 0; t < d; ++t) s[t] += xi[t];
    ++count[a[i]];
  }
  for (index_t c = 0; c < clusters; ++c) {
    if (count[c] == 0) continue;
    for (index_t t = 0; t < d; ++t) {
      (*centroids)[c * d + t] = static_cast<float>(sum[c * d + t] / count[c]);
    }
  }
}
}  // namespace

void LabelClusters::build(const float* w, const float* b, index_t num_labels, index_t hidden,
                          const LabelClusterParams& params) {
  HETSGD_CHECK(num_labels >= 1 && hidden >= 1,
               "label clusters over " << num_labels << " labels of width " << hidden);
  const index_t d = hidden + 1;
  index_t clusters =
      params.clusters > 0
          ? params.clusters
          : std::min<index_t>(kMaxAutoClusters, std::lround(1.2 * std::sqrt(num_labels)));
  clusters = std::clamp<index_t>(clusters, 1, num_labels);
  const index_t sample =
      std::clamp<index_t>(params.sample > 0 ? params.sample : 64 * clusters, clusters, num_labels);
  // The sample: evenly spaced labels from a seeded offset, so it spans label ids of every
  // frequency (data sets number labels in no particular order).
  const index_t offset =
      static_cast<index_t>(params.seed % static_cast<std::uint64_t>(num_labels / sample));
  std::vector<float> xs(static_cast<std::size_t>(sample * d));
  for (index_t i = 0; i < sample; ++i) {
    const auto j = static_cast<col_t>(offset + i * (num_labels / sample));
    gather_label(w, b, hidden, j, xs.data() + i * d);
  }
  // Initial centroids: evenly spaced members of the sample.
  centroids_.assign(static_cast<std::size_t>(clusters * d), 0.0f);
  for (index_t c = 0; c < clusters; ++c) {
    const float* src = xs.data() + (c * (sample / clusters)) * d;
    std::copy(src, src + d, centroids_.data() + c * d);
  }
  std::vector<index_t> a(static_cast<std::size_t>(sample));
  for (int it = 0; it < params.iterations; ++it) {
    assign(xs.data(), sample, centroids_, clusters, d, a.data());
    update_means(xs.data(), sample, a.data(), clusters, d, &centroids_);
  }
  xs.clear();
  xs.shrink_to_fit();
  // Every label to its nearest centroid, a block of gathered vectors at a time.
  std::vector<index_t> label_cluster(static_cast<std::size_t>(num_labels));
  std::vector<float> block;
  constexpr index_t kGather = 64 * kAssignBlock;
  std::vector<double> sum(static_cast<std::size_t>(clusters * d), 0.0);
  std::vector<index_t> count(static_cast<std::size_t>(clusters), 0);
  std::vector<double> sumsq(static_cast<std::size_t>(clusters), 0.0);
  for (index_t j0 = 0; j0 < num_labels; j0 += kGather) {
    const index_t n = std::min(kGather, num_labels - j0);
    block.resize(static_cast<std::size_t>(n * d));
    for (index_t i = 0; i < n; ++i) {
      gather_label(w, b, hidden, static_cast<col_t>(j0 + i), block.data() + i * d);
    }
    assign(block.data(), n, centroids_, clusters, d, label_cluster.data() + j0);
    for (index_t i = 0; i < n; ++i) {
      const index_t c = label_cluster[j0 + i];
      double* s = sum.data() + c * d;
      double sq = 0.0;
      for (index_t t = 0; t < d; ++t) {
        s[t] += block[i * d + t];
        sq += static_cast<double>(block[i * d + t]) * block[i * d + t];
      }
      sumsq[c] += sq;
      ++count[c];
    }
  }
  // Final centroids from all members; empty clusters are dropped, so every probe scores labels.
  offsets_.assign(1, 0);
  std::vector<index_t> renumber(static_cast<std::size_t>(clusters), -1);
  std::vector<float> kept;
  spread_.clear();
  for (index_t c = 0; c < clusters; ++c) {
    if (count[c] == 0) continue;
    renumber[c] = static_cast<index_t>(offsets_.size()) - 1;
    double cn = 0.0;
    for (index_t t = 0; t < d; ++t) {
      const double m = sum[c * d + t] / count[c];
      cn += m * m;
      kept.push_back(static_cast<float>(m));
    }
    const double r2 = std::max(0.0, sumsq[c] / count[c] - cn);  // mean |x - c|^2
    spread_.push_back(static_cast<float>(
        std::sqrt(r2 / static_cast<double>(d) * 2.0 * std::log(1.0 + count[c]))));
    offsets_.push_back(offsets_.back() + count[c]);
  }
  centroids_ = std::move(kept);
  clusters_ = static_cast<index_t>(offsets_.size()) - 1;
  ids_.resize(static_cast<std::size_t>(num_labels));
  std::vector<index_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (index_t j = 0; j < num_labels; ++j) {
    ids_[fill[renumber[label_cluster[j]]]++] = static_cast<col_t>(j);
  }
  hidden_ = hidden;
}

void LabelClusters::search(const float* h, index_t rows, const float* w, const float* b, int k,
                           int probes, const std::uint8_t* skip, float* scores, col_t* ids,
                           int* size) const {
  HETSGD_CHECK(ready(), "label clusters: search before build");
  HETSGD_CHECK(k >= 1 && probes >= 1, "label clusters: k " << k << ", probes " << probes);
  const index_t np = std::min<index_t>(probes, clusters_);
  // As many rows at a time as kSlots (row, probe) pairs: the more rows probe a cluster in one
  // pass, the larger its sgemm and the fewer times its label vectors are gathered.
  const index_t block = std::max<index_t>(1, kSlots / np);
  for (index_t r0 = 0; r0 < rows; r0 += block) {
    const index_t n = std::min(block, rows - r0);
    search_block(h + r0 * hidden_, n, w, b, k, np, skip, scores + r0 * k, ids + r0 * k, size + r0);
  }
}

void LabelClusters::search_block(const float* h, index_t rows, const float* w, const float* b,
                                 int k, index_t np, const std::uint8_t* skip, float* scores,
                                 col_t* ids, int* size) const {
  const index_t d = hidden_ + 1;
  tbb::enumerable_thread_specific<SearchScratch> scratch;
  // 1. Each row's probes: q . c + |q| spread_c, where q . c = h . c[0..hidden) + c[hidden].
  std::vector<index_t> probe(static_cast<std::size_t>(rows * np));
  for_blocks(rows, kProbeRows, [&](index_t r0, index_t r1) {
    SearchScratch& sc = scratch.local();
    float* z = grown(&sc.z, (r1 - r0) * clusters_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(r1 - r0),
                static_cast<int>(clusters_), static_cast<int>(hidden_), 1.0f, h + r0 * hidden_,
                static_cast<int>(hidden_), centroids_.data(), static_cast<int>(d), 0.0f, z,
                static_cast<int>(clusters_));
    float* top_s = grown(&sc.top_s, np);
    if (sc.top_c.size() < static_cast<std::size_t>(np))
      sc.top_c.resize(static_cast<std::size_t>(np));
    for (index_t r = r0; r < r1; ++r) {
      float* zr = z + (r - r0) * clusters_;
      const float* hr = h + r * hidden_;
      const float qn =
          kSpreadWeight * std::sqrt(1.0f + cblas_sdot(static_cast<int>(hidden_), hr, 1, hr, 1));
      for (index_t c = 0; c < clusters_; ++c)
        zr[c] += centroids_[c * d + hidden_] + qn * spread_[c];
      vec::topk_row(zr, clusters_, static_cast<int>(np), top_s, sc.top_c.data());
      for (index_t p = 0; p < np; ++p) probe[r * np + p] = sc.top_c[p];
    }
  });
  // 2. Inverted: the (row, probe) slots of each cluster, rows ascending.
  std::vector<index_t> start(static_cast<std::size_t>(clusters_ + 1), 0);
  for (index_t s = 0; s < rows * np; ++s) ++start[probe[s] + 1];
  for (index_t c = 0; c < clusters_; ++c) start[c + 1] += start[c];
  std::vector<index_t> slots(static_cast<std::size_t>(rows * np));
  {
    std::vector<index_t> fill(start.begin(), start.end() - 1);
    for (index_t s = 0; s < rows * np; ++s) slots[fill[probe[s]]++] = s;
  }
  // 3. Cluster-major exact scores: each slot gets its cluster's top-k for its row.
  std::vector<float> slot_s(static_cast<std::size_t>(rows * np * k));
  std::vector<col_t> slot_i(slot_s.size());
  for_blocks(clusters_, 1, [&](index_t c, index_t) {
    const index_t nq = start[c + 1] - start[c];
    const index_t n = cluster_size(c);
    if (nq == 0) return;
    const col_t* mem = members(c);
    SearchScratch& sc = scratch.local();
    float* wc = grown(&sc.wc, n * hidden_);
    float* bc = grown(&sc.bc, n);
    for (index_t i = 0; i < n; ++i) {
      const float* src = w + static_cast<std::size_t>(mem[i]) * hidden_;
      std::copy(src, src + hidden_, wc + i * hidden_);
      bc[i] = skip != nullptr && skip[mem[i]] != 0 ? -INFINITY : b[mem[i]];
    }
    for (index_t q0 = 0; q0 < nq; q0 += kClusterRows) {
      const index_t m = std::min(kClusterRows, nq - q0);
      const index_t* sl = slots.data() + start[c] + q0;
      float* hq = grown(&sc.hq, m * hidden_);
      for (index_t i = 0; i < m; ++i) {
        const float* src = h + (sl[i] / np) * hidden_;
        std::copy(src, src + hidden_, hq + i * hidden_);
      }
      float* z = grown(&sc.z, m * n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(hidden_), 1.0f, hq, static_cast<int>(hidden_), wc,
                  static_cast<int>(hidden_), 0.0f, z, static_cast<int>(n));
      for (index_t i = 0; i < m; ++i) {
        float* zr = z + i * n;
        // A label scoring below the k-th of its row's list so far (the head's, filled before
        // the search) cannot enter that list: it becomes -inf here, so the top-k skips it 16
        // at a time instead of offering it (step 4 merges only into lists that improve).
        const index_t row = sl[i] / np;
        const float floor = size[row] == k ? scores[row * k + k - 1] : -INFINITY;
        for (index_t t = 0; t < n; ++t) {
          const float v = zr[t] + bc[t];
          zr[t] = v < floor ? -INFINITY : v;
        }
        float* out_s = slot_s.data() + sl[i] * k;
        col_t* out_i = slot_i.data() + sl[i] * k;
        vec::topk_row(zr, n, k, out_s, out_i);
        for (int t = 0; t < k; ++t) {
          if (out_i[t] >= 0) out_i[t] = out_s[t] == -INFINITY ? -1 : mem[out_i[t]];
        }
      }
    }
  });
  // 4. Each row's probes merged into its list.
  for_blocks(rows, kProbeRows, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      for (index_t p = 0; p < np; ++p) {
        const index_t s = r * np + p;
        for (int t = 0; t < k && slot_i[s * k + t] >= 0; ++t) {
          math::topk_insert(scores + r * k, ids + r * k, k, size[r], slot_s[s * k + t],
                            slot_i[s * k + t]);
        }
      }
    }
  });
}

}  // namespace hetsgd::cpu
