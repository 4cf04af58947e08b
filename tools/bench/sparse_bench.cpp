// The sparse first layer: CSR x dense forward (H = relu(X W0 + b0)), the transpose build that
// groups a batch's entries by feature, and the row-sparse weight gradient. Counters report
// FLOP/s (2 * nnz * hidden) and the distinct rows U a batch touches.
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <string>
#include <vector>

#include "kernels/cpu/sparse.h"
#include "tools/bench/bench_data.h"

namespace hetsgd::bench {
namespace {

void BM_SparseForward(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  const Dataset batch = make_data(shape, kBatch, 11);
  const auto w0 = random_floats(shape.features * kHidden, 1);
  const auto b0 = random_floats(kHidden, 2);
  std::vector<float> h(static_cast<size_t>(kBatch * kHidden));
  tbb::task_arena arena(threads);
  for (auto _ : state) {
    arena.execute([&] { cpu::sparse_forward(batch, w0.data(), b0.data(), kHidden, h.data()); });
    benchmark::DoNotOptimize(h.data());
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * batch.nnz() * kHidden,
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["nnz"] = static_cast<double>(batch.nnz());
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_SparseForward)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_BatchFeaturesBuild(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const Dataset batch = make_data(shape, kBatch, 12);
  cpu::BatchFeatures features;
  features.reset(shape.features);
  for (auto _ : state) {
    features.build(batch);
    benchmark::DoNotOptimize(features.size());
  }
  state.counters["U"] = static_cast<double>(features.size());
  state.SetItemsProcessed(state.iterations() * batch.nnz());
}
BENCHMARK(BM_BatchFeaturesBuild)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_SparseWeightGrad(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  const Dataset batch = make_data(shape, kBatch, 13);
  cpu::BatchFeatures features;
  features.reset(shape.features);
  features.build(batch);
  const auto dh = random_floats(kBatch * kHidden, 3);
  std::vector<float> dw(static_cast<size_t>(features.size() * kHidden));
  tbb::task_arena arena(threads);
  for (auto _ : state) {
    arena.execute([&] { cpu::sparse_weight_grad(features, dh.data(), kHidden, dw.data()); });
    benchmark::DoNotOptimize(dw.data());
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * batch.nnz() * kHidden,
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["U"] = static_cast<double>(features.size());
}
BENCHMARK(BM_SparseWeightGrad)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace hetsgd::bench
