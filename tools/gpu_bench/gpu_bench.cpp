// GPU micro-benchmark for the device check: cuBLAS output-layer GEMM rate (FP32 and TF32) and
// train_step throughput of one CUDA replica on amazon-670k-shaped synthetic data.
// Prints one `key,value` line per measurement (CSV, machine-readable) on stdout.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "core/random.h"
#include "datasets/synthetic.h"
#include "kernels/registry.h"

namespace {

// Exits with a message: this is a tool's main, not library code.
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gpu_bench: %s failed\n", what);
    std::exit(1);
  }
}

// GFLOP/s of C (rows x labels) = A (rows x hidden) W (hidden x labels), the output layer's
// forward GEMM in the same column-major mapping CudaDevice uses.
double gemm_gflops(int rows, int hidden, int labels, bool tf32, int reps) {
  float *a = nullptr, *w = nullptr, *c = nullptr;
  check(cudaMalloc(&a, sizeof(float) * rows * hidden) == cudaSuccess, "cudaMalloc");
  check(cudaMalloc(&w, sizeof(float) * hidden * static_cast<size_t>(labels)) == cudaSuccess,
        "cudaMalloc");
  check(cudaMalloc(&c, sizeof(float) * rows * static_cast<size_t>(labels)) == cudaSuccess,
        "cudaMalloc");
  cudaMemset(a, 0, sizeof(float) * rows * hidden);
  cudaMemset(w, 0, sizeof(float) * hidden * static_cast<size_t>(labels));
  cublasHandle_t h;
  check(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  const float one = 1.0f, zero = 0.0f;
  auto run = [&] {
    check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, labels, rows, hidden, &one, w, labels, a, hidden,
                      &zero, c, labels) == CUBLAS_STATUS_SUCCESS,
          "cublasSgemm");
  };
  run();  // warm-up (heuristics, clocks)
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaEventRecord(t0);
  for (int i = 0; i < reps; ++i) run();
  cudaEventRecord(t1);
  cudaEventSynchronize(t1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, t0, t1);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(w);
  cudaFree(c);
  return 2.0 * rows * hidden * static_cast<double>(labels) * reps / (ms * 1e-3) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  // Usage: hetsgd_gpu_bench [scale=0.02] [batch=256] [seconds=10]
  const double scale = argc > 1 ? std::atof(argv[1]) : 0.02;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 256;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 10.0;
  if (hetsgd::cuda_device_count() < 1) {
    std::fprintf(stderr, "gpu_bench: no CUDA device\n");
    return 1;
  }
  const hetsgd::datasets::SyntheticSpec spec =
      hetsgd::datasets::scale_rows(hetsgd::datasets::synthetic_preset("amazon-670k"), scale);
  const auto data = hetsgd::datasets::generate_synthetic(spec, 1);
  const hetsgd::Dataset& train = data.first;
  const int hidden = 128;
  const int labels = static_cast<int>(train.num_labels);
  std::printf("dataset,amazon-670k x%.3f (%lld rows, %lld features, %d labels)\n", scale,
              static_cast<long long>(train.rows()), static_cast<long long>(train.num_features),
              labels);
  std::printf("gemm_fp32_gflops,%.1f\n", gemm_gflops(batch, hidden, labels, false, 20));
  std::printf("gemm_tf32_gflops,%.1f\n", gemm_gflops(batch, hidden, labels, true, 20));

  for (bool tf32 : {false, true}) {
    hetsgd::ModelConfig config;
    config.num_features = train.num_features;
    config.num_labels = train.num_labels;
    config.hidden = {hidden};
    config.optimizer.kind = hetsgd::OptimizerKind::kSgd;
    hetsgd::DeviceOptions options;
    options.tf32 = tf32;
    auto dev = hetsgd::make_device(hetsgd::DeviceId::cuda(0), config, options);
    std::vector<hetsgd::index_t> order(static_cast<size_t>(train.rows()));
    std::iota(order.begin(), order.end(), 0);
    hetsgd::CsrBatch b;
    hetsgd::index_t cursor = 0, samples = 0;
    auto next = [&] {
      if (cursor + batch > train.rows()) cursor = 0;
      hetsgd::gather_rows(train, order.data() + cursor, batch, &b);
      cursor += batch;
    };
    for (int i = 0; i < 3; ++i) {  // warm-up: allocations, cuBLAS/cuSPARSE plans
      next();
      dev->train_step(b, 0.1f);
    }
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0.0;
    float loss = 0.0f;
    while (elapsed < seconds) {
      next();
      loss = dev->train_step(b, 0.1f);
      samples += batch;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf("train_step_samples_per_s_%s,%.0f\n", tf32 ? "tf32" : "fp32", samples / elapsed);
    std::printf("train_step_last_loss_%s,%.4f\n", tf32 ? "tf32" : "fp32", loss);
  }
  return 0;
}
