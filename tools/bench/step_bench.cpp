// Whole training steps through the public Device API (kernels/registry.h), the row-sparse
// optimiser update in isolation (core/math), and the merge of K replicas through the host
// Communicator. items/s are samples for steps and parameters for updates and merges.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/math/optimizer_update.h"
#include "kernels/cpu/update.h"
#include "kernels/registry.h"
#include "tools/bench/bench_data.h"

namespace hetsgd::bench {
namespace {

// One train_step (forward, backward, optimiser) on a 256-row batch; args: shape, threads, adam.
void BM_TrainStep(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  const bool adam = state.range(2) != 0;
  const ModelConfig config = model_for(shape, adam ? OptimizerKind::kAdam : OptimizerKind::kSgd);
  DeviceOptions options;
  options.threads = threads;
  auto device = make_device(DeviceId::cpu(0), config, options);
  const Dataset batch = make_data(shape, kBatch, 31);
  for (auto _ : state) benchmark::DoNotOptimize(device->train_step(batch, 1e-3f));
  state.SetItemsProcessed(state.iterations() * kBatch);
  // Dense FLOP of the step: sparse layer fwd + dW0 (2 * 2*nnz*h), output layer fwd + dW1 + dH.
  const double flops = 2 * 2.0 * batch.nnz() * kHidden + 3 * 2.0 * kBatch * kHidden * shape.labels;
  state.counters["FLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(adam ? "adam" : "sgd") + " L=" + std::to_string(shape.labels));
}
BENCHMARK(BM_TrainStep)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Lazy Adam on U touched rows of W0 (U x hidden floats): the row-sparse first-layer update.
void BM_RowSparseAdamUpdate(benchmark::State& state) {
  const index_t rows = state.range(0);
  const index_t n = rows * kHidden;
  auto w = random_floats(n, 1);
  const auto g = random_floats(n, 2);
  std::vector<float> m(static_cast<size_t>(n), 0.0f), v(static_cast<size_t>(n), 0.0f);
  long long t = 0;
  for (auto _ : state) {
    const math::AdamStep s = math::adam_step(1e-3f, 0.9f, 0.999f, ++t);
    for (index_t i = 0; i < n; ++i) {
      math::adam_update(w[i], m[i], v[i], g[i], s, 0.9f, 0.999f, 1e-8f, 0.0f);
    }
    benchmark::DoNotOptimize(w.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * 5 * sizeof(float));  // w,m,v r/w + g
}
BENCHMARK(BM_RowSparseAdamUpdate)->Arg(512)->Arg(4096)->Arg(16384);

// `n` distinct ids drawn uniformly from [0, count), ascending (a step's touched rows or labels).
std::vector<col_t> random_ids(index_t count, index_t n) {
  std::vector<col_t> ids;
  std::uint64_t x = 88172645463325252ULL;
  while (static_cast<index_t>(ids.size()) < n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ids.push_back(static_cast<col_t>(x % static_cast<std::uint64_t>(count)));
    if (static_cast<index_t>(ids.size()) == n) {
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
  }
  return ids;
}

// Lazy Adam on a step's touched rows (update_rows, compact gradient): W0's rows of the batch's
// features, and the output layer's rows (stored by label) of a shortlisted step's candidates;
// args: rows of the table, touched rows. Rows are scattered over a table far larger than the
// caches.
void BM_TouchedRowsAdam(benchmark::State& state) {
  const index_t features = state.range(0);
  const index_t n = state.range(1);
  auto w = random_floats(kHidden * features, 1);
  std::vector<float> m(w.size(), 0.0f), v(w.size(), 0.0f);
  const auto g = random_floats(kHidden * n, 2);
  std::vector<col_t> rows = random_ids(features, n);
  OptimizerConfig opt;
  opt.kind = OptimizerKind::kAdam;
  std::int64_t t = 0;
  for (auto _ : state) {
    const cpu::StepRule rule = cpu::make_step_rule(opt, 1e-3f, ++t);
    cpu::update_rows(rule, rows.data(), n, kHidden, w.data(), m.data(), v.data(), g.data(), true,
                     0.0f);
    benchmark::DoNotOptimize(w.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_TouchedRowsAdam)
    ->Args({135909, 10000})
    ->Args({670091, 5000})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Weighted average of K CPU replicas through the host Communicator (a merge's reduction).
void BM_MergeAverage(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const int replicas = static_cast<int>(state.range(1));
  const ModelConfig config = model_for(shape);
  DeviceOptions options;
  options.threads = 1;
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> devices;
  for (int i = 0; i < replicas; ++i) {
    owned.push_back(make_device(DeviceId::cpu(i), config, options));
    devices.push_back(owned.back().get());
  }
  const std::vector<double> weights(replicas, 1.0 / replicas);
  std::vector<float> average(static_cast<size_t>(devices[0]->layout().total()));
  auto comm = make_host_communicator();
  for (auto _ : state) {
    comm->average_params(devices, weights, average.data());
    benchmark::DoNotOptimize(average.data());
  }
  state.SetItemsProcessed(state.iterations() * replicas * static_cast<int64_t>(average.size()));
  state.SetBytesProcessed(state.iterations() * replicas *
                          static_cast<int64_t>(average.size() * sizeof(float)));
}
BENCHMARK(BM_MergeAverage)
    ->ArgsProduct({{2, 3}, {2, 4}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace hetsgd::bench
