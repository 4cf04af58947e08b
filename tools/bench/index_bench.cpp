// The shortlist's label index (kernels/cpu/label_index.h): one build over L coded label
// vectors of width 129 (hidden 128 + bias) on one thread, and single queries at two efSearch
// values. items/s are labels inserted, or queries. Vectors are uniform random, the hardest
// case for a graph (trained label vectors cluster); 670,091 is Amazon-670K's label count.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/label_index.h"
#include "tools/bench/bench_data.h"

namespace hetsgd::bench {
namespace {

std::vector<float> label_vectors(index_t labels) {
  return random_floats(labels * (kHidden + 1), 5);
}

// Args: labels, M, efConstruction.
void BM_LabelIndexBuild(benchmark::State& state) {
  const auto labels = static_cast<index_t>(state.range(0));
  const cpu::LabelIndexParams params{static_cast<int>(state.range(1)),
                                     static_cast<int>(state.range(2)), 16};
  const std::vector<float> v = label_vectors(labels);
  const std::size_t stride = cpu::LabelIndex::code_bytes(kHidden + 1);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(labels) * stride);
  for (index_t j = 0; j < labels; ++j) {
    cpu::LabelIndex::encode(v.data() + j * (kHidden + 1), kHidden + 1,
                            codes.data() + static_cast<std::size_t>(j) * stride);
  }
  for (auto _ : state) {
    cpu::LabelIndex index;
    benchmark::DoNotOptimize(index.build(codes.data(), labels, kHidden, params));
  }
  state.SetItemsProcessed(state.iterations() * labels);
}
BENCHMARK(BM_LabelIndexBuild)
    ->Args({50000, 12, 40})
    ->Args({50000, 8, 16})
    ->Args({670091, 8, 16})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// Args: labels, efSearch. The 10 best labels per query, as a shortlisted row asks.
void BM_LabelIndexQuery(benchmark::State& state) {
  const auto labels = static_cast<index_t>(state.range(0));
  const cpu::LabelIndexParams params{8, 16, static_cast<int>(state.range(1))};
  const std::vector<float> v = label_vectors(labels);
  cpu::LabelIndex index;
  index.build(v.data(), labels, kHidden, params);
  const std::vector<float> queries = random_floats(1024 * kHidden, 6);
  std::vector<col_t> ids;
  std::vector<std::uint8_t> scratch;
  index_t q = 0;
  for (auto _ : state) {
    index.search(queries.data() + (q % 1024) * kHidden, 10, &ids, &scratch);
    benchmark::DoNotOptimize(ids.data());
    ++q;
  }
  state.SetItemsProcessed(state.iterations());
}
// Fixed iterations: the setup builds a 670,091-label index, which must not run once per trial.
BENCHMARK(BM_LabelIndexQuery)
    ->Args({670091, 16})
    ->Args({670091, 32})
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(20000);

}  // namespace
}  // namespace hetsgd::bench
