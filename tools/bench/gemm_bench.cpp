// Dense GEMMs of the model: the BLAS sgemm peak on this machine, sgemm at the output layer's
// shapes (one thread), and the CPU backend's dense layer (forward + both backward GEMMs) inside
// a oneTBB arena, the way the CPU device runs it. Counters report FLOP/s (2*M*N*K per GEMM).
#include <cblas.h>

#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/dense.h"
#include "tools/bench/bench_data.h"

namespace hetsgd::bench {
namespace {

// Square sgemm with OpenBLAS's own threads: the reference peak GFLOP/s for the other numbers.
void BM_SgemmPeak(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  openblas_set_num_threads(threads);
  const auto a = random_floats(index_t{n} * n, 1);
  const auto b = random_floats(index_t{n} * n, 2);
  std::vector<float> c(static_cast<size_t>(n) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  openblas_set_num_threads(1);  // the CPU backend expects single-threaded BLAS
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(openblas_get_corename());
}
BENCHMARK(BM_SgemmPeak)
    ->ArgsProduct({{1024}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One single-threaded sgemm at the output layer's shapes for a 256-row batch:
// which = 0 forward Z = H W1 (B x L x h), 1 weight grad dW1 = H^T dZ (h x L x B),
// 2 input grad dH = dZ W1^T (B x h x L).
void BM_SgemmModelShape(benchmark::State& state) {
  openblas_set_num_threads(1);
  const int which = static_cast<int>(state.range(0));
  const index_t labels = shape_by_index(static_cast<int>(state.range(1))).labels;
  const int B = kBatch, h = kHidden, L = static_cast<int>(labels);
  const auto hmat = random_floats(index_t{B} * h, 1);
  const auto w = random_floats(index_t{h} * L, 2);
  const auto dz = random_floats(index_t{B} * L, 3);
  std::vector<float> out(static_cast<size_t>(std::max(B * L, h * L)));
  for (auto _ : state) {
    if (which == 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, L, h, 1.0f, hmat.data(), h,
                  w.data(), L, 0.0f, out.data(), L);
    } else if (which == 1) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, L, B, 1.0f, hmat.data(), h, dz.data(),
                  L, 0.0f, out.data(), L);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, h, L, 1.0f, dz.data(), L, w.data(), L,
                  0.0f, out.data(), h);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * B * h * L, benchmark::Counter::kIsIterationInvariantRate);
  static const char* kNames[] = {"fwd H*W1", "dW1=H^T*dZ", "dH=dZ*W1^T"};
  state.SetLabel(std::string(kNames[which]) + " L=" + std::to_string(L));
}
BENCHMARK(BM_SgemmModelShape)
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The CPU backend's output layer, as one training step runs it: forward, weight gradient and
// input gradient (3 * 2*B*h*L FLOP) in a oneTBB arena of `threads` threads.
void BM_DenseLayerInArena(benchmark::State& state) {
  cpu::ensure_single_threaded_blas();
  const index_t L = shape_by_index(static_cast<int>(state.range(0))).labels;
  const int threads = static_cast<int>(state.range(1));
  const index_t B = kBatch, h = kHidden;
  const auto hmat = random_floats(B * h, 1);
  const auto w = random_floats(h * L, 2);
  const auto bias = random_floats(L, 3);
  std::vector<float> z(static_cast<size_t>(B * L)), dw(static_cast<size_t>(h * L)),
      db(static_cast<size_t>(L)), dh(static_cast<size_t>(B * h));
  tbb::task_arena arena(threads);
  for (auto _ : state) {
    arena.execute([&] {
      cpu::dense_forward(hmat.data(), B, h, L, w.data(), bias.data(), false, z.data());
      cpu::dense_weight_grad(hmat.data(), z.data(), B, h, L, dw.data(), db.data());
      cpu::dense_input_grad(z.data(), w.data(), hmat.data(), B, h, L, dh.data());
    });
    benchmark::DoNotOptimize(dh.data());
  }
  state.counters["FLOPS"] =
      benchmark::Counter(3 * 2.0 * B * h * L, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel("L=" + std::to_string(L));
}
BENCHMARK(BM_DenseLayerInArena)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace hetsgd::bench
