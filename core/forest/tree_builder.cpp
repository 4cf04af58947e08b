/// \file core/forest/tree_builder.cpp
/// ForestBuilder's splits (label k-means, feature centroids, routing) and leaves.
#include "core/forest/tree_builder.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/forest/half.h"
#include "core/forest/projection_dot.h"
#include "core/resident.h"

namespace hetsgd {

LabelForest ForestBuilder::tree(int t, const std::atomic<bool>* halt) {
  // Grown in the builder's arrays, which keep their capacity, and returned in exact-size
  // copies: in a fresh forest each array moved to fresh pages at every doubling.
  LabelForest& f = work_;
  f.num_features_ = data_.num_features;
  f.num_labels_ = data_.num_labels;
  f.roots_.clear();
  f.nodes_.clear();
  f.centroid_ids_.clear();
  f.centroid_values_.clear();
  f.leaf_labels_.clear();
  f.leaf_weights_.clear();
  // The tree's random numbers depend on (seed, t) alone: trees grown in parallel, in whatever
  // order, make the same forest on any thread count.
  rng_seed_ = hash64(o_.seed, static_cast<std::uint64_t>(t));
  counter_ = 0;
  project_labels();
  std::vector<index_t> rows(static_cast<size_t>(n_));
  for (index_t i = 0; i < n_; ++i) rows[static_cast<size_t>(i)] = i;
  // Feature-major (d x arity): routing a row reads the K cells of each of its features side by
  // side. Allocated once a tree; each split clears only the features it touched.
  acc_.assign(static_cast<size_t>(d_) * static_cast<size_t>(o_.arity), 0.0f);
  feat_mark_.assign(static_cast<size_t>(d_), 0);
  counts_.assign(static_cast<size_t>(data_.num_labels), 0);
  struct Task {
    std::int32_t node;
    index_t begin, end;
    int depth;
  };
  f.roots_.push_back(0);
  f.nodes_.emplace_back();
  // A task owns the range [begin, end) of `rows`: split() reorders a range child by child, so
  // the children's ranges are consecutive pieces of it and no row list is copied per node.
  std::vector<Task> stack{{0, 0, n_, 0}};
  std::vector<index_t> ends;
  while (!stack.empty()) {
    if (halt != nullptr && halt->load(std::memory_order_relaxed)) return LabelForest();
    const Task task = stack.back();
    stack.pop_back();
    const index_t n = task.end - task.begin;
    if (n <= o_.leaf_rows || task.depth >= o_.max_depth ||
        !split(&f, rows.data() + task.begin, n, &ends)) {
      make_leaf(&f, task.node, rows.data() + task.begin, n);
      continue;
    }
    // split() appended the children's nodes (with their centroids) at the end.
    const auto kids = static_cast<std::int32_t>(ends.size());
    const auto first = static_cast<std::int32_t>(f.nodes_.size()) - kids;
    f.nodes_[static_cast<size_t>(task.node)].first_child = first;
    f.nodes_[static_cast<size_t>(task.node)].children = kids;
    index_t begin = task.begin;
    for (std::int32_t c = 0; c < kids; ++c) {
      stack.push_back(
          {first + c, begin, task.begin + ends[static_cast<size_t>(c)], task.depth + 1});
      begin = task.begin + ends[static_cast<size_t>(c)];
    }
  }
  LabelForest out;
  out.num_features_ = f.num_features_;
  out.num_labels_ = f.num_labels_;
  out.roots_ = f.roots_;
  out.nodes_ = resident_copy(f.nodes_);
  out.centroid_ids_ = resident_copy(f.centroid_ids_);
  out.centroid_values_ = resident_copy(f.centroid_values_);
  out.leaf_labels_ = resident_copy(f.leaf_labels_);
  out.leaf_weights_ = resident_copy(f.leaf_weights_);
  return out;
}

void ForestBuilder::project_labels() {
  const auto D = static_cast<size_t>(o_.label_dims);
  const auto L = static_cast<size_t>(data_.num_labels);
  // The builder's arrays, sized at its first tree: mapped in one call each (core/resident.h).
  R_.reserve(L * D);
  make_resident(R_.data(), L * D * sizeof(float));
  R_.resize(L * D);
  for (size_t j = 0; j < R_.size(); j += 2) {
    // Box-Muller: two Gaussians from two uniforms.
    const double u1 = std::max(1e-12, static_cast<double>(uniform()));
    const double u2 = static_cast<double>(uniform());
    const double r = std::sqrt(-2.0 * std::log(u1));
    R_[j] = static_cast<float>(r * std::cos(6.283185307179586 * u2));
    if (j + 1 < R_.size()) R_[j + 1] = static_cast<float>(r * std::sin(6.283185307179586 * u2));
  }
  // R^T y for a 0/1 label vector y is the sum of the row's labels' rows of R; normalised, so
  // that k-means on dot products clusters by cosine (a row with many labels is no farther out).
  P_.reserve(static_cast<size_t>(n_) * D);
  make_resident(P_.data(), static_cast<size_t>(n_) * D * sizeof(float));
  P_.assign(static_cast<size_t>(n_) * D, 0.0f);
  for (index_t i = 0; i < n_; ++i) {
    float* p = P_.data() + static_cast<size_t>(i) * D;
    for (index_t j = data_.y_indptr[i]; j < data_.y_indptr[i + 1]; ++j) {
      const float* r = R_.data() + static_cast<size_t>(data_.y_indices[j]) * D;
      for (size_t c = 0; c < D; ++c) p[c] += r[c];
    }
    normalise(p, D);
  }
}

void ForestBuilder::normalise(float* v, size_t n) {
  double s = 0.0;
  for (size_t c = 0; c < n; ++c) s += static_cast<double>(v[c]) * v[c];
  if (s <= 0.0) return;  // a row without labels keeps its zero projection
  const auto inv = static_cast<float>(1.0 / std::sqrt(s));
  for (size_t c = 0; c < n; ++c) v[c] *= inv;
}

std::vector<int> ForestBuilder::kmeans(const index_t* sample, index_t s, int k) {
  const auto D = static_cast<size_t>(o_.label_dims);
  const int dims = o_.label_dims;
  std::vector<float> C(static_cast<size_t>(k) * D);
  // The sample's projections side by side: its rows are scattered over P, and the passes
  // below read them eleven times or more, each read then a miss in the cache.
  kx_.resize(static_cast<size_t>(s) * D);
  for (index_t i = 0; i < s; ++i) std::copy(p(sample[i]), p(sample[i]) + D, &kx_[i * D]);
  const auto x = [&](index_t i) { return kx_.data() + static_cast<size_t>(i) * D; };
  // k-means++ seeding on the cosine distance 1 - p.c.
  std::vector<float> dist(static_cast<size_t>(s), std::numeric_limits<float>::max());
  // uniform() is below 1, but its product with s can round up to s in float: hence the min.
  index_t pick = std::min<index_t>(s - 1, static_cast<index_t>(uniform() * static_cast<float>(s)));
  for (int j = 0; j < k; ++j) {
    std::copy(x(pick), x(pick) + D, C.data() + static_cast<size_t>(j) * D);
    double total = 0.0;
    const float* cj = C.data() + j * D;
    for (index_t i = 0; i < s; i += 2) {  // two rows' dot products at once, then in row order
      float v[2];
      const index_t i1 = std::min(i + 1, s - 1);  // an odd last row: itself twice
      projection_dot2(x(i), cj, x(i1), cj, dims, &v[0], &v[1]);
      for (index_t r = i; r < std::min(i + 2, s); ++r) {
        const float dd = std::max(0.0f, 1.0f - v[r - i]);
        dist[static_cast<size_t>(r)] = std::min(dist[static_cast<size_t>(r)], dd);
        total += dist[static_cast<size_t>(r)];
      }
    }
    // The next centre is drawn with probability proportional to its distance from the nearest
    // centre so far, which spreads the centres over the projections. The uniform pick stands
    // when every distance is 0 (all sampled rows share one projection).
    double target = static_cast<double>(uniform()) * total;
    pick = std::min<index_t>(s - 1, static_cast<index_t>(uniform() * static_cast<float>(s)));
    for (index_t i = 0; total > 0.0 && i < s; ++i) {
      target -= dist[static_cast<size_t>(i)];
      if (target <= 0.0) {
        pick = i;
        break;
      }
    }
  }
  std::vector<int> a(static_cast<size_t>(s), -1);  // -1: the first pass always counts as moved
  std::vector<float> v(static_cast<size_t>(k));
  for (int it = 0; it < o_.kmeans_iters; ++it) {
    bool moved = false;
    for (index_t i = 0; i < s; ++i) {
      const float* pi = x(i);
      for (int j = 0; j < k; j += 2) {  // two centres at once (an odd last one twice)
        const int j1 = std::min(j + 1, k - 1);
        projection_dot2(pi, C.data() + j * D, pi, C.data() + j1 * D, dims, &v[j], &v[j1]);
      }
      int best = 0;
      float best_s = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < k; ++j) {
        if (v[j] > best_s) best_s = v[j], best = j;
      }
      moved = moved || a[static_cast<size_t>(i)] != best;
      a[static_cast<size_t>(i)] = best;
    }
    if (!moved) break;  // the same assignment would give the same centres again
    std::vector<float> sum(C.size(), 0.0f);
    std::vector<index_t> count(static_cast<size_t>(k), 0);
    for (index_t i = 0; i < s; ++i) {
      const int j = a[static_cast<size_t>(i)];
      ++count[static_cast<size_t>(j)];
      const float* pi = x(i);
      for (size_t c = 0; c < D; ++c) sum[j * D + c] += pi[c];
    }
    // Spherical k-means: a centre is its members' mean direction, their normalised sum.
    for (int j = 0; j < k; ++j) {
      if (count[static_cast<size_t>(j)] == 0) continue;  // an empty cluster keeps its centre
      normalise(sum.data() + j * D, D);
      std::copy(sum.data() + j * D, sum.data() + (j + 1) * D, C.data() + j * D);
    }
  }
  return a;
}

bool ForestBuilder::split(LabelForest* f, index_t* rows, index_t n, std::vector<index_t>* ends) {
  const auto K = static_cast<size_t>(o_.arity);
  std::vector<index_t> size(K, 0);
  std::vector<double> norm(K, 0.0);
  const index_t s = std::min(n, o_.kmeans_rows);
  // A random sample at the front (partial shuffle): k-means sees a uniform draw of the node's
  // rows whatever order the parent left them in, and costs the same at any node size.
  for (index_t i = 0; i < s; ++i) {
    const index_t j =
        i +
        std::min<index_t>(n - i - 1, static_cast<index_t>(uniform() * static_cast<float>(n - i)));
    std::swap(rows[i], rows[j]);
  }
  // A sample of fewer rows than `arity` seeds no more clusters than it has rows.
  std::vector<int> route = kmeans(rows, s, static_cast<int>(std::min<index_t>(o_.arity, s)));
  route.resize(static_cast<size_t>(n));  // the first routing fills the rows past the sample
  // The label clusters of the sample seed the feature centroids; each pass routes every row
  // to its nearest centroid, and a further pass recentres them on the rows routed there.
  for (int pass = 0; pass <= o_.route_iters; ++pass) {
    centroids(rows, pass == 0 ? s : n, route, &norm);
    route_rows(rows, n, norm, &route, &size);
  }
  const bool splits = std::count_if(size.begin(), size.end(), [](index_t c) { return c > 0; }) > 1;
  if (splits) {
    ends->clear();
    // Through a copy: the rows are written back grouped by child, each child's rows in their
    // order here, so that a child's range is one consecutive piece of the node's.
    scratch_.assign(rows, rows + n);
    index_t at = 0;
    for (size_t j = 0; j < K; ++j) {
      if (size[j] == 0) continue;
      LabelForest::Node child;
      child.centroid_begin = static_cast<std::int64_t>(f->centroid_ids_.size());
      // Its kept entries, in feature order; one rounded to 0 is not stored.
      for (const Entry& e : kept_[j]) {
        if (e.value == 0.0f) continue;
        f->centroid_ids_.push_back(e.feature);
        f->centroid_values_.push_back(e.value);
      }
      child.centroid_end = static_cast<std::int64_t>(f->centroid_ids_.size());
      f->nodes_.push_back(child);
      for (index_t i = 0; i < n; ++i) {
        if (route[static_cast<size_t>(i)] == static_cast<int>(j))
          rows[at++] = scratch_[static_cast<size_t>(i)];
      }
      ends->push_back(at);
    }
  }
  for (col_t ft : feat_touched_)
    std::fill_n(acc_.begin() + static_cast<std::ptrdiff_t>(ft * K), K, 0.0f);
  feat_touched_.clear();
  return splits;
}

void ForestBuilder::centroids(const index_t* rows, index_t n, const std::vector<int>& assign,
                              std::vector<double>* norm) {
  const auto K = static_cast<size_t>(o_.arity);
  for (col_t ft : feat_touched_)
    std::fill_n(acc_.begin() + static_cast<std::ptrdiff_t>(ft * K), K, 0.0f);
  feat_touched_.clear();
  for (index_t i = 0; i < n; ++i) {
    const index_t r = rows[i];
    // 1 / the row's length: a centroid sums unit-length rows, so a row with many features
    // weighs no more than one with few.
    const float w = inv_norm_[static_cast<size_t>(r)];
    for (index_t e = data_.x_indptr[r]; e < data_.x_indptr[r + 1]; ++e) {
      const col_t ft = data_.x_indices[e];
      // Each feature listed once (the sort below is then over distinct features).
      if (feat_mark_[static_cast<size_t>(ft)] == 0) {
        feat_mark_[static_cast<size_t>(ft)] = 1;
        feat_touched_.push_back(ft);
      }
      acc_[static_cast<size_t>(ft) * K + static_cast<size_t>(assign[static_cast<size_t>(i)])] +=
          data_.x_values[e] * w;
    }
  }
  for (col_t ft : feat_touched_) feat_mark_[static_cast<size_t>(ft)] = 0;
  finish_centroids(norm);
}

void ForestBuilder::finish_centroids(std::vector<double>* norm) {
  const auto K = static_cast<size_t>(o_.arity);
  // One pass over the touched features gathers every child's nonzero entries: a child's
  // entries lie K floats apart, and a pass per child read the whole block K times.
  kept_.resize(K);
  for (auto& c : kept_) c.clear();
  for (col_t ft : feat_touched_) {
    const float* v = &acc_[static_cast<size_t>(ft) * K];
    for (size_t j = 0; j < K; ++j) {
      if (v[j] != 0.0f) kept_[j].push_back({std::fabs(v[j]), ft, v[j]});
    }
  }
  const auto nnz = static_cast<size_t>(o_.centroid_nnz);
  const auto by_feature = [](const Entry& a, const Entry& b) { return a.feature < b.feature; };
  for (std::vector<Entry>& c : kept_) {
    if (nnz == 0 || c.size() <= nnz) {  // nothing to cut
      std::sort(c.begin(), c.end(), by_feature);
      continue;
    }
    // The floor is the nnz-th largest magnitude: entries above it are kept, and ties at it
    // in feature order until nnz are kept, so that the cut depends on the rows' set alone.
    std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(nnz) - 1, c.end(),
                     [](const Entry& a, const Entry& b) { return a.magnitude > b.magnitude; });
    const float floor = c[nnz - 1].magnitude;
    c.erase(
        std::remove_if(c.begin(), c.end(), [floor](const Entry& e) { return e.magnitude < floor; }),
        c.end());
    std::sort(c.begin(), c.end(), by_feature);
    size_t kept = 0;
    auto out = c.begin();
    for (const Entry& e : c) {
      if (e.magnitude == floor && kept >= nnz) continue;
      *out++ = e;
      ++kept;
    }
    c.erase(out, c.end());
  }
  // Each centroid scaled to unit length (its entries summed in feature order) and rounded to
  // the half precision the file stores (core/forest/half.h): the training rows are routed by
  // the centroids a scored row will meet. Back in acc_, for route_rows().
  for (col_t ft : feat_touched_)
    std::fill_n(acc_.begin() + static_cast<std::ptrdiff_t>(ft * K), K, 0.0f);
  for (size_t j = 0; j < K; ++j) {
    double sq = 0.0;
    for (const Entry& e : kept_[j]) sq += static_cast<double>(e.value) * e.value;
    (*norm)[j] = sq;
    const float root = sq > 0.0 ? static_cast<float>(std::sqrt(sq)) : 0.0f;
    for (Entry& e : kept_[j]) {
      if (root > 0.0f) e.value = round_to_half(e.value / root);
      acc_[static_cast<size_t>(e.feature) * K + j] = e.value;
    }
  }
}

void ForestBuilder::route_rows(const index_t* rows, index_t n, const std::vector<double>& norm,
                               std::vector<int>* route, std::vector<index_t>* size) const {
  const auto K = static_cast<size_t>(o_.arity);
  std::fill(size->begin(), size->end(), 0);
  std::vector<float> score(K);
  for (index_t i = 0; i < n; ++i) {
    const index_t r = rows[i];
    std::fill(score.begin(), score.end(), 0.0f);
    for (index_t e = data_.x_indptr[r]; e < data_.x_indptr[r + 1]; ++e) {
      const float* cell = acc_.data() + static_cast<size_t>(data_.x_indices[e]) * K;
      for (size_t j = 0; j < K; ++j) score[j] += data_.x_values[e] * cell[j];
    }
    int best = -1;
    for (size_t j = 0; j < K; ++j) {
      if (norm[j] > 0.0 && (best < 0 || score[j] > score[static_cast<size_t>(best)]))
        best = static_cast<int>(j);
    }
    (*route)[static_cast<size_t>(i)] = best < 0 ? 0 : best;
    ++(*size)[static_cast<size_t>((*route)[static_cast<size_t>(i)])];
  }
}

void ForestBuilder::make_leaf(LabelForest* f, std::int32_t node, const index_t* rows, index_t n) {
  LabelForest::Node& leaf = f->nodes_[static_cast<size_t>(node)];
  leaf.leaf_begin = static_cast<std::int64_t>(f->leaf_labels_.size());
  // counts_ spans every label and is reset label by label through touched_, so a leaf costs
  // its rows' label entries, not the label count.
  touched_.clear();
  for (index_t i = 0; i < n; ++i) {
    for (index_t e = data_.y_indptr[rows[i]]; e < data_.y_indptr[rows[i] + 1]; ++e) {
      const col_t l = data_.y_indices[e];
      if (counts_[static_cast<size_t>(l)]++ == 0) touched_.push_back(l);
    }
  }
  if (o_.leaf_labels > 0 && touched_.size() > static_cast<size_t>(o_.leaf_labels)) {
    // The most frequent labels (ties: lower id) carry the leaf's vote.
    std::nth_element(touched_.begin(), touched_.begin() + o_.leaf_labels - 1, touched_.end(),
                     [this](col_t x, col_t y) {
                       const index_t cx = counts_[static_cast<size_t>(x)];
                       const index_t cy = counts_[static_cast<size_t>(y)];
                       return cx > cy || (cx == cy && x < y);
                     });
    for (size_t t = static_cast<size_t>(o_.leaf_labels); t < touched_.size(); ++t)
      counts_[static_cast<size_t>(touched_[t])] = 0;
    touched_.resize(static_cast<size_t>(o_.leaf_labels));
  }
  // In label order, whatever order the rows met them: a leaf's entries depend on its rows'
  // labels alone. Its frequencies are rounded to the half precision the file stores, as the
  // centroids are, so that validation scores the forest the file will hold.
  std::sort(touched_.begin(), touched_.end());
  for (col_t l : touched_) {
    f->leaf_labels_.push_back(l);
    f->leaf_weights_.push_back(
        round_to_half(static_cast<float>(counts_[static_cast<size_t>(l)]) / static_cast<float>(n)));
    counts_[static_cast<size_t>(l)] = 0;
  }
  leaf.leaf_end = static_cast<std::int64_t>(f->leaf_labels_.size());
}

}  // namespace hetsgd
