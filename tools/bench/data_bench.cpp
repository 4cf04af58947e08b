// Input pipeline: batch assembly (gather_rows of a shuffled permutation), XC text parsing
// (MB/s through datasets::read_xc on a generated file) and binary cache load.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/random.h"
#include "datasets/binary_cache.h"
#include "datasets/xc_format.h"
#include "tools/bench/bench_data.h"

namespace hetsgd::bench {
namespace {

// A generated dataset written once per process as XC text and as a binary cache in a
// temporary directory (removed at exit).
struct TempFiles {
  std::filesystem::path dir;
  std::string xc;
  std::string cache;
  std::uintmax_t xc_bytes = 0;
  std::uintmax_t cache_bytes = 0;
  TempFiles() {
    dir = std::filesystem::temp_directory_path() / ("hetsgd_bench_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const Dataset data = make_data(kEurlex, 20000, 41);
    xc = (dir / "data.txt").string();
    cache = (dir / "data.bin").string();
    datasets::write_xc(data, xc);
    datasets::save_cache(data, cache);
    xc_bytes = std::filesystem::file_size(xc);
    cache_bytes = std::filesystem::file_size(cache);
  }
  ~TempFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const TempFiles& temp_files() {
  static const TempFiles files;
  return files;
}

void BM_GatherRows(benchmark::State& state) {
  const Shape shape = shape_by_index(static_cast<int>(state.range(0)));
  const Dataset data = make_data(shape, 20000, 42);
  std::vector<index_t> perm(static_cast<size_t>(data.rows()));
  std::iota(perm.begin(), perm.end(), index_t{0});
  std::shuffle(perm.begin(), perm.end(), SplitMix64(3));
  CsrBatch batch;
  index_t cursor = 0;
  for (auto _ : state) {
    if (cursor + kBatch > data.rows()) cursor = 0;
    gather_rows(data, perm.data() + cursor, kBatch, &batch);
    cursor += kBatch;
    benchmark::DoNotOptimize(batch.x_indices.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_GatherRows)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_ReadXc(benchmark::State& state) {
  const TempFiles& files = temp_files();
  for (auto _ : state) {
    const Dataset d = datasets::read_xc(files.xc);
    benchmark::DoNotOptimize(d.x_indices.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(files.xc_bytes));
}
BENCHMARK(BM_ReadXc)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadCache(benchmark::State& state) {
  const TempFiles& files = temp_files();
  for (auto _ : state) {
    const Dataset d = datasets::load_cache(files.cache);
    benchmark::DoNotOptimize(d.x_indices.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(files.cache_bytes));
}
BENCHMARK(BM_LoadCache)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hetsgd::bench
