#include "core/engine/calibrate_grid.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/error.h"
#include "core/memory_budget.h"

namespace hetsgd::calibration {

std::string format_fixed(double v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(4) << v;
  return o.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ForestOptions forest_options(const CalibrationOptions& o, int trees, std::uint64_t seed) {
  ForestOptions fo;
  fo.trees = trees;
  fo.threads = o.threads;
  fo.seed = seed;
  return fo;
}

std::uint64_t forest_estimate_bytes(int trees, const Dataset& rows) {
  return saturating_mul(
      static_cast<std::uint64_t>(trees),
      saturating_mul(static_cast<std::uint64_t>(rows.label_nnz() + rows.nnz()), 8));
}

std::shared_ptr<const LabelForest> grow_forest(const CalibrationOptions& o, int trees,
                                               std::int64_t max_bytes, const Dataset& rows,
                                               std::uint64_t seed, const std::atomic<bool>* stop,
                                               Calibration* c, const ForestPilot& pilot,
                                               std::vector<LabelForest> ahead) {
  const std::uint64_t estimate = forest_estimate_bytes(trees, rows);
  if (o.forest == kAutoWeight && estimate > available_memory_bytes() / 4) {
    c->forest_skipped = "a forest of about " + format_bytes(estimate) +
                        " would take more than a quarter of the memory available";
    return nullptr;
  }
  check_memory(estimate, "--forest (" + std::to_string(trees) + " trees over " +
                             std::to_string(rows.rows()) + " rows)");
  if (o.announce) {
    // Seconds without a progress line otherwise: say what runs and how to skip it.
    std::cerr << "hetsgd: growing a label forest of " << (max_bytes > 0 ? "up to " : "") << trees
              << " trees on " << rows.rows() << " rows"
              << (max_bytes > 0 ? " (those within " +
                                      format_bytes(static_cast<std::uint64_t>(max_bytes)) + ")"
                                : std::string())
              << " (--forest=off skips it)\n";
  }
  ForestOptions fo = forest_options(o, trees, seed);
  fo.max_bytes = max_bytes;
  bool declined = false;
  if (pilot) {
    fo.pilot_share = 1.0 / 3.0;
    fo.pilot_min = kForestMinTrees;
    fo.go_on = [&](const LabelForest& first, int count) {
      declined = !pilot(first, count);
      return !declined;
    };
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto grown_ahead = static_cast<int>(ahead.size());
  auto forest =
      std::make_shared<const LabelForest>(LabelForest::grow(rows, fo, stop, std::move(ahead)));
  c->forest_seconds += seconds_since(t0);
  if (declined) return nullptr;
  if (max_bytes > 0 && forest->trees() < kForestMinTrees && !(stop != nullptr && stop->load())) {
    c->forest_skipped = std::to_string(forest->trees()) + " trees fit in " +
                        format_bytes(static_cast<std::uint64_t>(max_bytes)) +
                        " (the network's parameters' bytes times " +
                        std::to_string(static_cast<int>(kForestBytesRatio)) + "), fewer than " +
                        std::to_string(kForestMinTrees) + " (--forest-trees grows one)";
    return nullptr;
  }
  if (forest->empty()) return nullptr;  // stopped by a signal
  c->forest_trees = forest->trees();
  c->forest_ahead = std::min(forest->trees(), grown_ahead);
  c->forest_nodes = forest->nodes();
  c->forest_rows = rows.rows();
  return forest;
}

std::shared_ptr<const LinearExpert> train_linear(const CalibrationOptions& o, const Dataset& rows,
                                                 std::int64_t max_bytes, std::uint64_t seed,
                                                 const std::atomic<bool>* stop, Calibration* c,
                                                 const LinearPilot& pilot,
                                                 const LabelForest* shortlist_by) {
  if (shortlist_by != nullptr) {
    // Each row's shortlist (4-byte ids) and its transpose by label (8-byte rows): at
    // debian-deps' 41,994 rows 16 MB, but a forest given by hand over millions of short rows
    // could ask for gigabytes.
    const std::uint64_t estimate = saturating_mul(
        static_cast<std::uint64_t>(rows.rows()), static_cast<std::uint64_t>(kLinearShortlist) * 12);
    if (o.linear == kAutoWeight && estimate > available_memory_bytes() / 4) {
      c->linear_skipped = "the classifiers' shortlists of about " + format_bytes(estimate) +
                          " would take more than a quarter of the memory available";
      return nullptr;
    }
    check_memory(estimate, "--linear's shortlists (" + std::to_string(rows.rows()) + " rows x " +
                               std::to_string(kLinearShortlist) + " labels)");
  }
  if (o.announce) {
    std::cerr << "hetsgd: training " << rows.num_labels << " linear classifiers on " << rows.rows()
              << " rows" << (shortlist_by != nullptr ? ", each on those its forest shortlists" : "")
              << " (--linear=off skips them)\n";
  }
  LinearOptions lo;
  lo.threads = o.threads;
  lo.seed = seed;
  bool declined = false;
  if (pilot) {
    lo.pilot_share = 1.0 / 3.0;
    lo.go_on = [&](const LinearExpert& first, const std::vector<char>& trained) {
      declined = !pilot(first, trained);
      return !declined;
    };
  }
  const auto t0 = std::chrono::steady_clock::now();
  LinearShortlist shortlist;
  if (shortlist_by != nullptr) {
    shortlist.k = kLinearShortlist;
    shortlist.sample_rows = kLinearSampleRows;
    shortlist_by->top_labels(rows, shortlist.k, &shortlist.labels);
  }
  LinearExpert trained =
      LinearExpert::train(rows, lo, stop, shortlist_by != nullptr ? &shortlist : nullptr);
  c->linear_seconds += seconds_since(t0);
  c->linear_shortlist = shortlist.k;
  if (declined || trained.empty()) return nullptr;  // the pilot's no, or stopped by a signal
  if (max_bytes > 0) trained.fit_bytes(max_bytes);
  c->linear_weights = trained.weights();
  return std::make_shared<const LinearExpert>(std::move(trained));
}

namespace {

// Row r of `truth`'s P@1 + P@3 + P@5 for its top labels `top` (k of them).
double row_p135(const CsrBatch& truth, index_t r, const col_t* top, int k) {
  const col_t* b = truth.y_indices.data() + truth.y_indptr[r];
  const col_t* e = truth.y_indices.data() + truth.y_indptr[r + 1];
  double sum = 0.0;
  int hits = 0;
  for (int j = 0; j < std::min(k, 5); ++j) {
    hits += top[j] >= 0 && std::find(b, e, top[j]) != e;
    if (j == 0 || j == 2 || j == 4) sum += static_cast<double>(hits) / (j + 1);
  }
  return sum;
}

}  // namespace

std::vector<RankingMetrics> pair_metrics(Ranker& ranker, const std::vector<Pair>& pairs,
                                         const std::vector<float>& prior, const Dataset& val,
                                         index_t rows, int k, const std::vector<float>* inv_prop,
                                         const std::atomic<bool>* stop,
                                         std::vector<std::vector<double>>* row_sums,
                                         std::vector<ExpertScores>* cache) {
  if (row_sums != nullptr) row_sums->assign(pairs.size(), {});
  const index_t L = ranker.network().config().num_labels;
  const index_t block = std::max<index_t>(1, kBlendBlock / L);
  std::vector<RankingMetrics> out(pairs.size());
  ExpertScores scored;
  std::vector<col_t> labels(static_cast<size_t>(block * k));
  CsrBatch sub;
  double loss = 0.0;
  for (index_t at = 0; at < rows && !(stop != nullptr && stop->load()); at += block) {
    const index_t end = std::min(rows, at + block);
    slice_rows(val, at, end, &sub);
    const auto b = static_cast<size_t>(at / block);
    const bool reuse = cache != nullptr && b < cache->size();
    if (cache != nullptr && !reuse) cache->emplace_back();
    ExpertScores& experts = cache != nullptr ? (*cache)[b] : scored;
    loss += static_cast<double>(ranker.log_experts(sub, &experts, reuse)) *
            static_cast<double>(end - at);
    for (size_t q = 0; q < pairs.size(); ++q) {
      const auto w = static_cast<float>(pairs[q].forest);
      const auto g = static_cast<float>(pairs[q].tail);
      const auto u = static_cast<float>(pairs[q].linear);
      tbb::parallel_for(tbb::blocked_range<index_t>(0, end - at, 8), [&](const auto& range) {
        std::vector<float> v(static_cast<size_t>(L));
        RowBlend blend(experts, L);
        for (index_t r = range.begin(); r != range.end(); ++r) {
          blend.row(r, w, u, prior.data(), g, v.data());
          Ranker::top_labels(v.data(), L, k, labels.data() + r * k);
        }
      });
      accumulate_ranking(sub, labels.data(), k, &out[q], inv_prop);
      if (row_sums == nullptr) continue;
      for (index_t r = 0; r < end - at; ++r)
        (*row_sums)[q].push_back(row_p135(sub, r, labels.data() + r * k, k));
    }
  }
  for (RankingMetrics& m : out) {
    finish_ranking(&m);
    m.loss = rows > 0 ? loss / static_cast<double>(rows) : 0.0;
  }
  return out;
}

std::pair<double, double> paired_gain(const std::vector<double>& a, const std::vector<double>& b) {
  const auto n = static_cast<double>(a.size());
  if (a.size() < 2) return {0.0, 0.0};
  double mean = 0.0, sq = 0.0;
  for (size_t i = 0; i < a.size(); ++i) mean += b[i] - a[i];
  mean /= n;
  for (size_t i = 0; i < a.size(); ++i) sq += (b[i] - a[i] - mean) * (b[i] - a[i] - mean);
  return {mean, std::sqrt(sq / (n - 1.0) / n)};
}

std::vector<GridPoint> grid_of(const std::vector<double>& weights,
                               const std::vector<RankingMetrics>& metrics) {
  std::vector<GridPoint> grid;
  for (size_t i = 0; i < weights.size(); ++i) grid.push_back({weights[i], metrics[i]});
  return grid;
}

// The projection, the gain's ratio to its error grown with the square root of the trees, is
// optimistic, so the pilot stops only forests the full-size choice would drop as well: bibtex
// 1.02 at 15 trees projects 1.79 at 46, measured 1.83; debian-deps 4.37 at 10 projects 7.6 at
// 30, measured 6.7; delicious 2.17 at 5 projects 3.1 at 10, measured 2.15.
ForestPilot forest_pilot(const CalibrationOptions& o, Device& device, const Dataset& val,
                         index_t val_rows, int k, const std::vector<float>& inv_prop,
                         const std::atomic<bool>* stop, Calibration* c) {
  return [&o, &device, &val, val_rows, k, &inv_prop, stop, c](const LabelForest& first, int trees) {
    const auto none = std::find(o.forest_grid.begin(), o.forest_grid.end(), 0.0);
    if (none == o.forest_grid.end()) return true;  // no weight 0 to compare with
    // The pilot's trees, not a copy of them (tens of MB): `first` outlives the probe.
    Ranker probe(device, std::shared_ptr<const LabelForest>(&first, [](const LabelForest*) {}),
                 0.0);
    std::vector<Pair> pairs;
    for (double x : o.forest_grid) pairs.push_back({x, 0.0});
    std::vector<std::vector<double>> rows;
    const index_t n = std::min(val_rows, kForestPilotRows);
    const std::vector<GridPoint> grid =
        grid_of(o.forest_grid, pair_metrics(probe, pairs, {}, val, n, k, &inv_prop, stop, &rows));
    const auto [gain, se] = paired_gain(rows[static_cast<size_t>(none - o.forest_grid.begin())],
                                        rows[grid_choice(grid)]);
    const double ratio = se > 0.0 ? gain / se : (gain > 0.0 ? 1e9 : 0.0);
    const double projected =
        ratio * std::sqrt(static_cast<double>(trees) / static_cast<double>(first.trees()));
    if (projected > kGainErrors) return true;
    c->forest_skipped = "a pilot of its first " + std::to_string(first.trees()) + " of " +
                        std::to_string(trees) + " trees gained " + format_fixed(gain) +
                        " validation P@1+P@3+P@5 on " + std::to_string(n) + " rows, " +
                        format_fixed(ratio) + " standard errors; even projected to " +
                        std::to_string(trees) + " trees (" + format_fixed(projected) +
                        ") that is within " + kGainErrorsWords + ", so the rest was not grown";
    return false;
  };
}

// The pilot ranks the pilot's labels alone, so that the other labels, which have no
// classifier yet, neither gain nor lose by the blend; its gain, like the forest pilot's, is
// projected by the square root of the size it stands for (here the labels).
LinearPilot linear_pilot(const CalibrationOptions& o, Device& device,
                         std::shared_ptr<const LabelForest> forest, double w, const Dataset& val,
                         index_t val_rows, int k, const std::atomic<bool>* stop, Calibration* c) {
  return [&o, &device, forest, w, &val, val_rows, k, stop, c](const LinearExpert& first,
                                                              const std::vector<char>& trained) {
    const auto none = std::find(o.linear_grid.begin(), o.linear_grid.end(), 0.0);
    if (none == o.linear_grid.end()) return true;  // no weight 0 to compare with
    const index_t L = first.num_labels();
    const auto picked = static_cast<index_t>(std::count(trained.begin(), trained.end(), 1));
    if (picked == 0) return true;
    Ranker probe(device, forest, 0.0, std::make_shared<const LinearExpert>(first), 0.0);
    const index_t n = std::min(val_rows, kForestPilotRows);
    const index_t block = std::max<index_t>(1, kBlendBlock / L);
    const auto wf = static_cast<float>(w);
    std::vector<std::vector<double>> rows(o.linear_grid.size());
    std::vector<float> v(static_cast<size_t>(L));
    std::vector<col_t> top(static_cast<size_t>(k));
    ExpertScores experts;
    CsrBatch sub, truth;
    for (index_t at = 0; at < n && !(stop != nullptr && stop->load()); at += block) {
      const index_t end = std::min(n, at + block);
      slice_rows(val, at, end, &sub);
      probe.log_experts(sub, &experts);
      // Each row's labels among the pilot's.
      truth = sub;
      truth.y_indices.clear();
      truth.y_indptr.assign(1, 0);
      for (index_t r = 0; r < sub.rows(); ++r) {
        for (index_t e = sub.y_indptr[r]; e < sub.y_indptr[r + 1]; ++e)
          if (trained[static_cast<size_t>(sub.y_indices[e])])
            truth.y_indices.push_back(sub.y_indices[e]);
        truth.y_indptr.push_back(static_cast<index_t>(truth.y_indices.size()));
      }
      RowBlend blend(experts, L);
      for (size_t q = 0; q < o.linear_grid.size(); ++q) {
        const auto u = static_cast<float>(o.linear_grid[q]);
        for (index_t r = 0; r < sub.rows(); ++r) {
          blend.row(r, wf, u, nullptr, 0.0f, v.data());
          for (index_t l = 0; l < L; ++l)
            if (!trained[static_cast<size_t>(l)])
              v[static_cast<size_t>(l)] = -std::numeric_limits<float>::infinity();
          Ranker::top_labels(v.data(), L, k, top.data());
          rows[q].push_back(row_p135(truth, r, top.data(), k));
        }
      }
    }
    size_t best = 0;
    const auto mean = [](const std::vector<double>& x) {
      double t = 0.0;
      for (double y : x) t += y;
      return x.empty() ? 0.0 : t / static_cast<double>(x.size());
    };
    for (size_t q = 1; q < rows.size(); ++q)
      if (mean(rows[q]) > mean(rows[best])) best = q;
    const auto [gain, se] =
        paired_gain(rows[static_cast<size_t>(none - o.linear_grid.begin())], rows[best]);
    const double ratio = se > 0.0 ? gain / se : (gain > 0.0 ? 1e9 : 0.0);
    const double projected =
        ratio * std::sqrt(static_cast<double>(L) / static_cast<double>(picked));
    if (projected > kGainErrors) return true;
    c->linear_skipped =
        "a pilot of the classifiers of " + std::to_string(picked) + " of " + std::to_string(L) +
        " labels gained " + format_fixed(gain) + " validation P@1+P@3+P@5 among those labels on " +
        std::to_string(rows[0].size()) + " rows, " + format_fixed(ratio) +
        " standard errors; even projected to every label (" + format_fixed(projected) +
        ") that is within " + kGainErrorsWords + ", so the rest was not trained";
    return false;
  };
}

}  // namespace hetsgd::calibration
