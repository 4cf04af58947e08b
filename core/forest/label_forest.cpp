#include "core/forest/label_forest.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/forest/tree_builder.h"
#include "core/resident.h"

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
  HETSGD_CHECK(max_bytes >= 0, "forest max_bytes " << max_bytes << " < 0");
  HETSGD_CHECK(pilot_share >= 0.0 && pilot_share <= 1.0,
               "forest pilot_share " << pilot_share << " outside [0, 1]");
  HETSGD_CHECK(pilot_min >= 1, "forest pilot_min " << pilot_min << " < 1");
}

namespace {

// What every tree reads: the rows, weighted by their features' idf where the options ask
// (a word every row holds says little about where a row belongs; the forest keeps the weights
// and applies them to the rows it scores), and each weighted row's inverse length.
struct ForestRows {
  ForestRows(const Dataset& train, const ForestOptions& options)
      : train_(train), use_weighted_(options.idf) {
    if (use_weighted_) {
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
    const Dataset& r = rows();
    inv_norm.assign(static_cast<size_t>(r.rows()), 0.0f);
    for (index_t i = 0; i < r.rows(); ++i) {
      double s = 0.0;
      for (index_t e = r.x_indptr[i]; e < r.x_indptr[i + 1]; ++e)
        s += static_cast<double>(r.x_values[e]) * r.x_values[e];
      inv_norm[static_cast<size_t>(i)] = s > 0.0 ? static_cast<float>(1.0 / std::sqrt(s)) : 0.0f;
    }
  }
  ForestRows(const ForestRows&) = delete;
  ForestRows& operator=(const ForestRows&) = delete;
  // The rows the trees grow from (also once `idf` has been moved into the forest).
  const Dataset& rows() const { return use_weighted_ ? weighted : train_; }

  std::vector<float> idf;  // empty: unweighted
  Dataset weighted;
  std::vector<float> inv_norm;

 private:
  const Dataset& train_;
  bool use_weighted_;
};

}  // namespace

std::vector<LabelForest> LabelForest::grow_ahead(const Dataset& train, const ForestOptions& options,
                                                 int limit, const std::atomic<bool>& halt) {
  options.validate();
  HETSGD_CHECK(train.rows() >= 1, "a forest needs at least one training row");
  std::vector<LabelForest> trees;
  if (limit < 1 || halt.load()) return trees;
  const ForestRows prepared(train, options);
  ForestBuilder builder(prepared.rows(), options, prepared.inv_norm);
  std::int64_t bytes = 0;
  for (int t = 0; t < limit && !halt.load(); ++t) {
    if (options.max_bytes > 0 && bytes > options.max_bytes) break;
    LabelForest tree = builder.tree(t, &halt);
    if (tree.empty()) break;  // halted within it
    bytes += tree.bytes();
    trees.push_back(std::move(tree));
  }
  return trees;
}

LabelForest LabelForest::grow(const Dataset& train, const ForestOptions& options,
                              const std::atomic<bool>* stop, std::vector<LabelForest> ahead) {
  options.validate();
  HETSGD_CHECK(train.rows() >= 1, "a forest needs at least one training row");
  ForestRows prepared(train, options);
  const Dataset& rows = prepared.rows();
  const std::vector<float>& inv_norm = prepared.inv_norm;
  std::vector<LabelForest> trees(static_cast<size_t>(options.trees));
  const int have = std::min(options.trees, static_cast<int>(ahead.size()));
  for (int t = 0; t < have; ++t)
    trees[static_cast<size_t>(t)] = std::move(ahead[static_cast<size_t>(t)]);
  tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
  tbb::enumerable_thread_specific<ForestBuilder> builders(rows, options, inv_norm);
  const auto grow_trees = [&](int begin, int end) {
    begin = std::max(begin, have);  // trees grown ahead are not grown again
    if (begin >= end) return;
    arena.execute([&] {
      tbb::parallel_for(begin, end, [&](int t) {
        if (stop != nullptr && stop->load()) return;
        trees[static_cast<size_t>(t)] = builders.local().tree(t);
      });
    });
  };
  LabelForest f;
  f.num_features_ = train.num_features;
  f.num_labels_ = train.num_labels;
  f.feature_weights_ = std::move(prepared.idf);
  int count = options.trees;
  int grown = 0;
  if (options.max_bytes > 0) {
    // The first trees say what a tree of these rows weighs; as many as fit are kept, in seed
    // order, so the forest does not depend on the thread count.
    const int probe = std::min(count, kBudgetProbeTrees);
    grow_trees(0, probe);
    grown = probe;
    const std::int64_t fixed = f.bytes();
    LabelForest first = f;
    first.append_trees(&trees, probe, false);
    const double per_tree = static_cast<double>(first.bytes() - fixed) / probe;
    const double fit = static_cast<double>(options.max_bytes - fixed) / std::max(per_tree, 1.0);
    count = static_cast<int>(std::clamp(fit, 0.0, static_cast<double>(count)));
  }
  // Trees are independent (tree t grows from seed and t alone): the pilot's are the forest's
  // first ones, and the rest grow after it as they would have without it.
  const int pilot =
      std::max(options.pilot_min, static_cast<int>(std::ceil(options.pilot_share * count)));
  if (options.pilot_share > 0.0 && pilot < count && options.go_on) {
    if (pilot > grown) grow_trees(grown, pilot);
    grown = std::max(grown, pilot);
    if (stop != nullptr && stop->load()) return LabelForest();
    LabelForest first = f;
    first.append_trees(&trees, pilot, false);
    if (!options.go_on(first, count)) return LabelForest();
  }
  if (count > grown) grow_trees(grown, count);
  if (stop != nullptr && stop->load()) return LabelForest();
  f.append_trees(&trees, count, true);
  return f;
}

void LabelForest::append_trees(std::vector<LabelForest>* trees, int count, bool release) {
  // Reserved once: grown tree by tree, each array was copied into fresh pages at every
  // doubling (a third of a debian-deps run's page faults).
  size_t nodes = nodes_.size(), centroids = centroid_ids_.size(), leaves = leaf_labels_.size();
  for (int i = 0; i < count; ++i) {
    const LabelForest& t = (*trees)[static_cast<size_t>(i)];
    nodes += t.nodes_.size(), centroids += t.centroid_ids_.size(), leaves += t.leaf_labels_.size();
  }
  roots_.reserve(roots_.size() + static_cast<size_t>(count));
  nodes_.reserve(nodes);
  centroid_ids_.reserve(centroids);
  centroid_values_.reserve(centroids);
  leaf_labels_.reserve(leaves);
  leaf_weights_.reserve(leaves);
  // And mapped in one call each (core/resident.h): copied into page by page, they took a sixth
  // of a debian-deps run's page faults.
  make_resident(nodes_.data(), nodes_.capacity() * sizeof(Node));
  make_resident(centroid_ids_.data(), centroid_ids_.capacity() * sizeof(col_t));
  make_resident(centroid_values_.data(), centroid_values_.capacity() * sizeof(float));
  make_resident(leaf_labels_.data(), leaf_labels_.capacity() * sizeof(col_t));
  make_resident(leaf_weights_.data(), leaf_weights_.capacity() * sizeof(float));
  for (int i = 0; i < count; ++i) {  // offsets shift by what the earlier trees hold
    LabelForest& t = (*trees)[static_cast<size_t>(i)];
    const auto node0 = static_cast<std::int32_t>(nodes_.size());
    const auto cent0 = static_cast<std::int64_t>(centroid_ids_.size());
    const auto leaf0 = static_cast<std::int64_t>(leaf_labels_.size());
    roots_.push_back(node0);
    for (Node nd : t.nodes_) {
      nd.first_child += nd.children > 0 ? node0 : 0;
      nd.centroid_begin += cent0, nd.centroid_end += cent0;
      nd.leaf_begin += leaf0, nd.leaf_end += leaf0;
      nodes_.push_back(nd);
    }
    centroid_ids_.insert(centroid_ids_.end(), t.centroid_ids_.begin(), t.centroid_ids_.end());
    centroid_values_.insert(centroid_values_.end(), t.centroid_values_.begin(),
                            t.centroid_values_.end());
    leaf_labels_.insert(leaf_labels_.end(), t.leaf_labels_.begin(), t.leaf_labels_.end());
    leaf_weights_.insert(leaf_weights_.end(), t.leaf_weights_.begin(), t.leaf_weights_.end());
    if (release) t = LabelForest();
  }
}

const LabelForest::Node& LabelForest::leaf_of(std::int32_t root, const float* x) const {
  const Node* nd = &nodes_[static_cast<size_t>(root)];
  while (nd->children > 0) {
    std::int32_t best = nd->first_child;
    float best_s = -std::numeric_limits<float>::infinity();
    for (std::int32_t c = nd->first_child; c < nd->first_child + nd->children; ++c) {
      const Node& ch = nodes_[static_cast<size_t>(c)];
      float s = 0.0f;
      for (std::int64_t e = ch.centroid_begin; e < ch.centroid_end; ++e) {
        s += x[centroid_ids_[static_cast<size_t>(e)]] * centroid_values_[static_cast<size_t>(e)];
      }
      if (s > best_s) best_s = s, best = c;
    }
    nd = &nodes_[static_cast<size_t>(best)];
  }
  return *nd;
}

// Per thread, the row's features (idf-weighted) spread over a dense vector, its leaves'
// label weights summed over a dense one and the labels they name, each listed once; only
// those are read and cleared after the row, so a row costs its features and its leaves, not
// the label count. Made once per thread, not per task: at debian-deps' shape the buffers are
// 260 KB, and a task of 16 rows that allocated its own paid page faults and zeroing for them
// (a quarter of `eval`'s time).
template <typename Emit>
void LabelForest::each_row_leaves(const CsrBatch& rows, const Emit& emit) const {
  const auto L = static_cast<size_t>(num_labels_);
  struct Scratch {
    std::vector<float> x, acc;
    std::vector<char> named;
    std::vector<col_t> touched;
  };
  tbb::enumerable_thread_specific<Scratch> scratch([&] {
    return Scratch{std::vector<float>(static_cast<size_t>(num_features_), 0.0f),
                   std::vector<float>(L, 0.0f),
                   std::vector<char>(L, 0),
                   {}};
  });
  tbb::parallel_for(tbb::blocked_range<index_t>(0, rows.rows(), 16), [&](const auto& range) {
    Scratch& s = scratch.local();
    for (index_t r = range.begin(); r != range.end(); ++r) {
      for (index_t e = rows.x_indptr[r]; e < rows.x_indptr[r + 1]; ++e) {
        const col_t c = rows.x_indices[e];
        if (c >= num_features_) continue;
        s.x[static_cast<size_t>(c)] =
            rows.x_values[e] * (feature_weights_.empty() ? 1.0f : feature_weights_[c]);
      }
      double total = 0.0;
      for (std::int32_t root : roots_) {
        const Node& leaf = leaf_of(root, s.x.data());
        for (std::int64_t e = leaf.leaf_begin; e < leaf.leaf_end; ++e) {
          const auto l = static_cast<size_t>(leaf_labels_[static_cast<size_t>(e)]);
          if (!s.named[l]) {
            s.named[l] = 1;
            s.touched.push_back(static_cast<col_t>(l));
          }
          s.acc[l] += leaf_weights_[static_cast<size_t>(e)];
          total += leaf_weights_[static_cast<size_t>(e)];
        }
      }
      emit(r, s.touched, s.acc, total);
      for (col_t l : s.touched) {
        s.acc[static_cast<size_t>(l)] = 0.0f;
        s.named[static_cast<size_t>(l)] = 0;
      }
      s.touched.clear();
      for (index_t e = rows.x_indptr[r]; e < rows.x_indptr[r + 1]; ++e) {
        if (rows.x_indices[e] < num_features_) s.x[static_cast<size_t>(rows.x_indices[e])] = 0.0f;
      }
    }
  });
}

void LabelForest::scores(const CsrBatch& rows, LabelScoreRows* scores) const {
  scores->resize(static_cast<size_t>(rows.rows()));
  each_row_leaves(rows, [&](index_t r, std::vector<col_t>& touched, const std::vector<float>& acc,
                            double total) {
    std::vector<LabelScore>& row = (*scores)[static_cast<size_t>(r)];
    row.clear();
    if (!(total > 0.0)) return;
    const auto scale = static_cast<float>(1.0 / total);
    for (col_t l : touched) row.push_back({l, acc[static_cast<size_t>(l)] * scale});
  });
}

void LabelForest::top_labels(const CsrBatch& rows, int k, std::vector<col_t>* labels) const {
  HETSGD_CHECK(k >= 1, "label forest: top_labels k " << k << " < 1");
  labels->assign(static_cast<size_t>(rows.rows()) * static_cast<size_t>(k), col_t{-1});
  each_row_leaves(rows, [&](index_t r, std::vector<col_t>& touched, const std::vector<float>& acc,
                            double) {
    const auto better = [&](col_t a, col_t b) {
      const float sa = acc[static_cast<size_t>(a)], sb = acc[static_cast<size_t>(b)];
      return sa > sb || (sa == sb && a < b);
    };
    const auto n = static_cast<std::ptrdiff_t>(std::min(touched.size(), static_cast<size_t>(k)));
    std::partial_sort(touched.begin(), touched.begin() + n, touched.end(), better);
    std::copy(touched.begin(), touched.begin() + n,
              labels->begin() + static_cast<std::ptrdiff_t>(r) * k);
  });
}

}  // namespace hetsgd
