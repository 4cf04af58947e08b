// Output-layer math: fused softmax cross-entropy (loss + gradient), one row serially through
// core/math and a whole batch through the CPU backend's row-parallel loss; top-k selection.
// items/s are logits processed (rows x L).
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <string>
#include <vector>

#include "core/math/softmax_ce.h"
#include "core/math/topk.h"
#include "kernels/cpu/loss.h"
#include "tools/bench/bench_data.h"

namespace hetsgd::bench {
namespace {

void BM_SoftmaxCeRow(benchmark::State& state) {
  const index_t L = shape_by_index(static_cast<int>(state.range(0))).labels;
  const auto z = random_floats(L, 1);
  std::vector<float> grad(static_cast<size_t>(L));
  const col_t labels[5] = {1, 7, 42, 100, 150};
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        math::softmax_ce_row(z.data(), L, labels, 5, 1.0f / kBatch, grad.data()));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * L);
}
BENCHMARK(BM_SoftmaxCeRow)->DenseRange(0, 3);

void BM_SoftmaxCeBatch(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  const Dataset batch = make_data(shape, kBatch, 21);
  const auto z0 = random_floats(kBatch * shape.labels, 2);
  std::vector<float> z(z0.size()), row_loss;
  tbb::task_arena arena(threads);
  for (auto _ : state) {
    state.PauseTiming();
    z = z0;  // loss_and_grad overwrites the logits with the gradient
    state.ResumeTiming();
    arena.execute([&] {
      benchmark::DoNotOptimize(cpu::loss_and_grad(batch, shape.labels, Loss::kSoftmax,
                                                  1.0f / kBatch, z.data(), &row_loss));
    });
  }
  state.SetItemsProcessed(state.iterations() * kBatch * shape.labels);
}
BENCHMARK(BM_SoftmaxCeBatch)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_TopkRow(benchmark::State& state) {
  const index_t L = shape_by_index(static_cast<int>(state.range(0))).labels;
  const int k = static_cast<int>(state.range(1));
  const auto z = random_floats(L, 3);
  std::vector<float> scores(static_cast<size_t>(k));
  std::vector<col_t> ids(static_cast<size_t>(k));
  for (auto _ : state) {
    math::topk_row(z.data(), L, k, scores.data(), ids.data());
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetItemsProcessed(state.iterations() * L);
}
BENCHMARK(BM_TopkRow)->ArgsProduct({{0, 1, 2, 3}, {5}});

}  // namespace
}  // namespace hetsgd::bench
