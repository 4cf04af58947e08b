#include "core/forest/label_forest.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/random.h"

namespace hetsgd {

void ForestOptions::validate() const {
  HETSGD_CHECK(trees >= 1 && trees <= 1000, "forest trees " << trees << " outside [1, 1000]");
  HETSGD_CHECK(arity >= 2 && arity <= 64, "forest arity " << arity << " outside [2, 64]");
  HETSGD_CHECK(leaf_rows >= 1, "forest leaf_rows " << leaf_rows << " < 1");
  HETSGD_CHECK(label_dims >= 1 && label_dims <= 4096,
               "forest label_dims " << label_dims << " outside [1, 4096]");
  HETSGD_CHECK(kmeans_iters >= 1, "forest kmeans_iters " << kmeans_iters << " < 1");
  HETSGD_CHECK(kmeans_rows >= arity,
               "forest kmeans_rows " << kmeans_rows << " below the arity " << arity);
  HETSGD_CHECK(max_depth >= 1, "forest max_depth " << max_depth << " < 1");
  HETSGD_CHECK(route_iters >= 0, "forest route_iters " << route_iters << " < 0");
  HETSGD_CHECK(leaf_labels >= 0, "forest leaf_labels " << leaf_labels << " < 0");
  HETSGD_CHECK(centroid_nnz >= 0, "forest centroid_nnz " << centroid_nnz << " < 0");
}

/// Grows one tree at a time into a forest of its own; grow() appends them in tree order.
class ForestBuilder {
 public:
  ForestBuilder(const Dataset& data, const ForestOptions& o, const std::vector<float>& inv_norm)
      : data_(data), o_(o), inv_norm_(inv_norm), n_(data.rows()), d_(data.num_features) {}

  LabelForest tree(int t) {
    LabelForest f;
    f.num_features_ = data_.num_features;
    f.num_labels_ = data_.num_labels;
    rng_seed_ = hash64(o_.seed, static_cast<std::uint64_t>(t));
    project_labels();
    std::vector<index_t> rows(static_cast<size_t>(n_));
    for (index_t i = 0; i < n_; ++i) rows[static_cast<size_t>(i)] = i;
    acc_.assign(static_cast<size_t>(d_) * static_cast<size_t>(o_.arity), 0.0f);
    counts_.assign(static_cast<size_t>(data_.num_labels), 0);
    struct Task {
      std::int32_t node;
      index_t begin, end;
      int depth;
    };
    f.roots_.push_back(0);
    f.nodes_.emplace_back();
    std::vector<Task> stack{{0, 0, n_, 0}};
    std::vector<index_t> ends;
    while (!stack.empty()) {
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
    return f;
  }

 private:
  float uniform() { return uniform01(rng_seed_, counter_++); }

  // P[i] = the unit-length sum of a Gaussian vector per label of row i (0 for no label).
  void project_labels() {
    const auto D = static_cast<size_t>(o_.label_dims);
    const auto L = static_cast<size_t>(data_.num_labels);
    std::vector<float> R(L * D);
    for (size_t j = 0; j < R.size(); j += 2) {
      // Box-Muller: two Gaussians from two uniforms.
      const double u1 = std::max(1e-12, static_cast<double>(uniform()));
      const double u2 = static_cast<double>(uniform());
      const double r = std::sqrt(-2.0 * std::log(u1));
      R[j] = static_cast<float>(r * std::cos(6.283185307179586 * u2));
      if (j + 1 < R.size()) R[j + 1] = static_cast<float>(r * std::sin(6.283185307179586 * u2));
    }
    P_.assign(static_cast<size_t>(n_) * D, 0.0f);
    for (index_t i = 0; i < n_; ++i) {
      float* p = P_.data() + static_cast<size_t>(i) * D;
      for (index_t j = data_.y_indptr[i]; j < data_.y_indptr[i + 1]; ++j) {
        const float* r = R.data() + static_cast<size_t>(data_.y_indices[j]) * D;
        for (size_t c = 0; c < D; ++c) p[c] += r[c];
      }
      normalise(p, D);
    }
  }

  static void normalise(float* v, size_t n) {
    double s = 0.0;
    for (size_t c = 0; c < n; ++c) s += static_cast<double>(v[c]) * v[c];
    if (s <= 0.0) return;
    const auto inv = static_cast<float>(1.0 / std::sqrt(s));
    for (size_t c = 0; c < n; ++c) v[c] *= inv;
  }

  const float* p(index_t row) const {
    return P_.data() + static_cast<size_t>(row) * static_cast<size_t>(o_.label_dims);
  }
  float dot(const float* a, const float* b) const {
    float s = 0.0f;
    for (int c = 0; c < o_.label_dims; ++c) s += a[c] * b[c];
    return s;
  }

  // Spherical k-means of the sample's label projections; returns each sample row's cluster.
  std::vector<int> kmeans(const index_t* sample, index_t s, int k) {
    const auto D = static_cast<size_t>(o_.label_dims);
    std::vector<float> C(static_cast<size_t>(k) * D);
    // k-means++ seeding on the cosine distance 1 - p.c.
    std::vector<float> dist(static_cast<size_t>(s), std::numeric_limits<float>::max());
    index_t pick =
        std::min<index_t>(s - 1, static_cast<index_t>(uniform() * static_cast<float>(s)));
    for (int j = 0; j < k; ++j) {
      std::copy(p(sample[pick]), p(sample[pick]) + D, C.data() + static_cast<size_t>(j) * D);
      double total = 0.0;
      for (index_t i = 0; i < s; ++i) {
        const float dd = std::max(0.0f, 1.0f - dot(p(sample[i]), C.data() + j * D));
        dist[static_cast<size_t>(i)] = std::min(dist[static_cast<size_t>(i)], dd);
        total += dist[static_cast<size_t>(i)];
      }
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
    std::vector<int> a(static_cast<size_t>(s), -1);
    for (int it = 0; it < o_.kmeans_iters; ++it) {
      bool moved = false;
      for (index_t i = 0; i < s; ++i) {
        int best = 0;
        float best_s = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < k; ++j) {
          const float v = dot(p(sample[i]), C.data() + j * D);
          if (v > best_s) best_s = v, best = j;
        }
        moved = moved || a[static_cast<size_t>(i)] != best;
        a[static_cast<size_t>(i)] = best;
      }
      if (!moved) break;
      std::vector<float> sum(C.size(), 0.0f);
      std::vector<index_t> count(static_cast<size_t>(k), 0);
      for (index_t i = 0; i < s; ++i) {
        const int j = a[static_cast<size_t>(i)];
        ++count[static_cast<size_t>(j)];
        const float* pi = p(sample[i]);
        for (size_t c = 0; c < D; ++c) sum[j * D + c] += pi[c];
      }
      for (int j = 0; j < k; ++j) {
        if (count[static_cast<size_t>(j)] == 0) continue;  // an empty cluster keeps its centre
        normalise(sum.data() + j * D, D);
        std::copy(sum.data() + j * D, sum.data() + (j + 1) * D, C.data() + j * D);
      }
    }
    return a;
  }

  // Clusters rows[0..n) by labels, routes them by feature centroids, reorders them by child
  // and appends the children's nodes; `ends` gets each child's end offset. False (nothing
  // appended) when the routing leaves every row in one child.
  bool split(LabelForest* f, index_t* rows, index_t n, std::vector<index_t>* ends) {
    const auto K = static_cast<size_t>(o_.arity);
    std::vector<int> route;
    std::vector<index_t> size(K, 0);
    std::vector<double> norm(K, 0.0);
    {
      const index_t s = std::min(n, o_.kmeans_rows);
      for (index_t i = 0; i < s; ++i) {  // a random sample at the front (partial shuffle)
        const index_t j =
            i + std::min<index_t>(n - i - 1,
                                  static_cast<index_t>(uniform() * static_cast<float>(n - i)));
        std::swap(rows[i], rows[j]);
      }
      const int k = static_cast<int>(std::min<index_t>(o_.arity, s));
      const std::vector<int> a = kmeans(rows, s, k);
      route.assign(a.begin(), a.end());
      route.resize(static_cast<size_t>(n));
      // The label clusters of the sample seed the feature centroids; each pass routes every row
      // to its nearest centroid, and a further pass recentres them on the rows routed there.
      for (int pass = 0; pass <= o_.route_iters; ++pass) {
        centroids(rows, pass == 0 ? s : n, route, &norm);
        route_rows(rows, n, norm, &route, &size);
      }
    }
    const bool splits =
        std::count_if(size.begin(), size.end(), [](index_t c) { return c > 0; }) > 1;
    if (splits) {
      ends->clear();
      scratch_.assign(rows, rows + n);
      index_t at = 0;
      for (size_t j = 0; j < K; ++j) {
        if (size[j] == 0) continue;
        LabelForest::Node child;
        child.centroid_begin = static_cast<std::int64_t>(f->centroid_ids_.size());
        for (col_t ft : feat_touched_) {
          if (acc_[ft * K + j] == 0.0f) continue;
          f->centroid_ids_.push_back(ft);
          f->centroid_values_.push_back(acc_[ft * K + j]);
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

  // acc_[f * arity + j] = the unit-length mean of the unit-length feature rows rows[i] with
  // assign[i] == j (i < n), keeping its `centroid_nnz` largest entries when that is set;
  // norm[j] = 0 for a cluster with no feature. feat_touched_ lists the features held, ascending.
  void centroids(const index_t* rows, index_t n, const std::vector<int>& assign,
                 std::vector<double>* norm) {
    const auto K = static_cast<size_t>(o_.arity);
    for (col_t ft : feat_touched_)
      std::fill_n(acc_.begin() + static_cast<std::ptrdiff_t>(ft * K), K, 0.0f);
    feat_touched_.clear();
    for (index_t i = 0; i < n; ++i) {
      const index_t r = rows[i];
      const float w = inv_norm_[static_cast<size_t>(r)];
      for (index_t e = data_.x_indptr[r]; e < data_.x_indptr[r + 1]; ++e) {
        float& cell = acc_[static_cast<size_t>(data_.x_indices[e]) * K +
                           static_cast<size_t>(assign[static_cast<size_t>(i)])];
        if (cell == 0.0f) feat_touched_.push_back(data_.x_indices[e]);
        cell += data_.x_values[e] * w;
      }
    }
    std::sort(feat_touched_.begin(), feat_touched_.end());
    feat_touched_.erase(std::unique(feat_touched_.begin(), feat_touched_.end()),
                        feat_touched_.end());
    finish_centroids(norm);
  }

  // Keeps each centroid's `centroid_nnz` largest entries (when set) and scales it to unit
  // length; norm[j] = its length before (0: no feature).
  void finish_centroids(std::vector<double>* norm) {
    const auto K = static_cast<size_t>(o_.arity);
    if (o_.centroid_nnz > 0 && feat_touched_.size() > static_cast<size_t>(o_.centroid_nnz)) {
      std::vector<float> mag(feat_touched_.size());
      for (size_t j = 0; j < K; ++j) {
        for (size_t t = 0; t < feat_touched_.size(); ++t)
          mag[t] = std::fabs(acc_[feat_touched_[t] * K + j]);
        auto kth = mag.begin() + o_.centroid_nnz - 1;
        std::nth_element(mag.begin(), kth, mag.end(), std::greater<float>());
        const float floor = *kth;
        index_t kept = 0;
        for (col_t ft : feat_touched_) {
          float& v = acc_[ft * K + j];
          if (std::fabs(v) < floor || (std::fabs(v) == floor && kept >= o_.centroid_nnz)) {
            v = 0.0f;
          } else if (v != 0.0f) {
            ++kept;
          }
        }
      }
    }
    std::fill(norm->begin(), norm->end(), 0.0);
    for (col_t ft : feat_touched_) {
      for (size_t j = 0; j < K; ++j)
        (*norm)[j] += static_cast<double>(acc_[ft * K + j]) * acc_[ft * K + j];
    }
    for (col_t ft : feat_touched_) {
      for (size_t j = 0; j < K; ++j) {
        if ((*norm)[j] > 0.0) acc_[ft * K + j] /= static_cast<float>(std::sqrt((*norm)[j]));
      }
    }
  }

  // route[i] = the child whose centroid has the largest dot product with rows[i] (a cluster
  // without features takes none; ties go to the lowest); size[j] counts the rows of child j.
  void route_rows(const index_t* rows, index_t n, const std::vector<double>& norm,
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

  void make_leaf(LabelForest* f, std::int32_t node, const index_t* rows, index_t n) {
    LabelForest::Node& leaf = f->nodes_[static_cast<size_t>(node)];
    leaf.leaf_begin = static_cast<std::int64_t>(f->leaf_labels_.size());
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
    std::sort(touched_.begin(), touched_.end());
    for (col_t l : touched_) {
      f->leaf_labels_.push_back(l);
      f->leaf_weights_.push_back(static_cast<float>(counts_[static_cast<size_t>(l)]) /
                                 static_cast<float>(n));
      counts_[static_cast<size_t>(l)] = 0;
    }
    leaf.leaf_end = static_cast<std::int64_t>(f->leaf_labels_.size());
  }

  const Dataset& data_;
  const ForestOptions& o_;
  const std::vector<float>& inv_norm_;
  index_t n_, d_;
  std::uint64_t rng_seed_ = 0, counter_ = 0;
  std::vector<float> P_, acc_;
  std::vector<index_t> counts_, scratch_;
  std::vector<col_t> touched_, feat_touched_;  // labels of a leaf, features of a split
};

LabelForest LabelForest::grow(const Dataset& train, const ForestOptions& options,
                              const std::atomic<bool>* stop) {
  options.validate();
  HETSGD_CHECK(train.rows() >= 1, "a forest needs at least one training row");
  // Routing weighs features by their idf: a word every row holds says little about where a
  // row belongs. The forest keeps the weights and applies them to the rows it scores.
  std::vector<float> idf;
  Dataset weighted;
  if (options.idf) {
    std::vector<double> df(static_cast<size_t>(train.num_features), 0.0);
    for (col_t c : train.x_indices) df[static_cast<size_t>(c)] += 1.0;
    idf.resize(df.size());
    for (size_t c = 0; c < df.size(); ++c) {
      idf[c] = static_cast<float>(
          std::log((static_cast<double>(train.rows()) + 1.0) / (df[c] + 1.0)) + 1.0);
    }
    weighted = train;
    for (size_t e = 0; e < weighted.x_values.size(); ++e)
      weighted.x_values[e] *= idf[static_cast<size_t>(weighted.x_indices[e])];
  }
  const Dataset& rows = options.idf ? weighted : train;
  std::vector<float> inv_norm(static_cast<size_t>(rows.rows()), 0.0f);
  for (index_t i = 0; i < rows.rows(); ++i) {
    double s = 0.0;
    for (index_t e = rows.x_indptr[i]; e < rows.x_indptr[i + 1]; ++e)
      s += static_cast<double>(rows.x_values[e]) * rows.x_values[e];
    inv_norm[static_cast<size_t>(i)] = s > 0.0 ? static_cast<float>(1.0 / std::sqrt(s)) : 0.0f;
  }
  std::vector<LabelForest> trees(static_cast<size_t>(options.trees));
  tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
  arena.execute([&] {
    tbb::parallel_for(0, options.trees, [&](int t) {
      if (stop != nullptr && stop->load()) return;
      ForestBuilder b(rows, options, inv_norm);
      trees[static_cast<size_t>(t)] = b.tree(t);
    });
  });
  LabelForest f;
  if (stop != nullptr && stop->load()) return f;
  f.num_features_ = train.num_features;
  f.num_labels_ = train.num_labels;
  f.feature_weights_ = std::move(idf);
  for (LabelForest& t : trees) {  // offsets shift by what the earlier trees hold
    const auto node0 = static_cast<std::int32_t>(f.nodes_.size());
    const auto cent0 = static_cast<std::int64_t>(f.centroid_ids_.size());
    const auto leaf0 = static_cast<std::int64_t>(f.leaf_labels_.size());
    f.roots_.push_back(node0);
    for (Node nd : t.nodes_) {
      nd.first_child += nd.children > 0 ? node0 : 0;
      nd.centroid_begin += cent0, nd.centroid_end += cent0;
      nd.leaf_begin += leaf0, nd.leaf_end += leaf0;
      f.nodes_.push_back(nd);
    }
    f.centroid_ids_.insert(f.centroid_ids_.end(), t.centroid_ids_.begin(), t.centroid_ids_.end());
    f.centroid_values_.insert(f.centroid_values_.end(), t.centroid_values_.begin(),
                              t.centroid_values_.end());
    f.leaf_labels_.insert(f.leaf_labels_.end(), t.leaf_labels_.begin(), t.leaf_labels_.end());
    f.leaf_weights_.insert(f.leaf_weights_.end(), t.leaf_weights_.begin(), t.leaf_weights_.end());
    t = LabelForest();
  }
  return f;
}

void LabelForest::add_scores(const CsrBatch& rows, float weight, float* scores) const {
  const auto L = static_cast<size_t>(num_labels_);
  tbb::parallel_for(tbb::blocked_range<index_t>(0, rows.rows(), 16),
                    [&](const tbb::blocked_range<index_t>& range) {
                      std::vector<float> x(static_cast<size_t>(num_features_), 0.0f), acc(L, 0.0f);
                      for (index_t r = range.begin(); r != range.end(); ++r) {
                        for (index_t e = rows.x_indptr[r]; e < rows.x_indptr[r + 1]; ++e) {
                          if (rows.x_indices[e] < num_features_)
                            x[static_cast<size_t>(rows.x_indices[e])] =
                                rows.x_values[e] *
                                (feature_weights_.empty()
                                     ? 1.0f
                                     : feature_weights_[static_cast<size_t>(rows.x_indices[e])]);
                        }
                        double total = 0.0;
                        for (std::int32_t root : roots_) {
                          const Node* nd = &nodes_[static_cast<size_t>(root)];
                          while (nd->children > 0) {
                            std::int32_t best = nd->first_child;
                            float best_s = -std::numeric_limits<float>::infinity();
                            for (std::int32_t c = nd->first_child;
                                 c < nd->first_child + nd->children; ++c) {
                              const Node& ch = nodes_[static_cast<size_t>(c)];
                              float s = 0.0f;
                              for (std::int64_t e = ch.centroid_begin; e < ch.centroid_end; ++e)
                                s += x[static_cast<size_t>(centroid_ids_[static_cast<size_t>(e)])] *
                                     centroid_values_[static_cast<size_t>(e)];
                              if (s > best_s) best_s = s, best = c;
                            }
                            nd = &nodes_[static_cast<size_t>(best)];
                          }
                          for (std::int64_t e = nd->leaf_begin; e < nd->leaf_end; ++e) {
                            acc[static_cast<size_t>(leaf_labels_[static_cast<size_t>(e)])] +=
                                leaf_weights_[static_cast<size_t>(e)];
                            total += leaf_weights_[static_cast<size_t>(e)];
                          }
                        }
                        float* out = scores + static_cast<size_t>(r) * L;
                        const float scale = total > 0.0 ? static_cast<float>(weight / total) : 0.0f;
                        for (size_t l = 0; l < L; ++l) {
                          out[l] += acc[l] * scale;
                          acc[l] = 0.0f;
                        }
                        for (index_t e = rows.x_indptr[r]; e < rows.x_indptr[r + 1]; ++e) {
                          if (rows.x_indices[e] < num_features_)
                            x[static_cast<size_t>(rows.x_indices[e])] = 0.0f;
                        }
                      }
                    });
}

}  // namespace hetsgd
