// GPU ceilings and hetsgd's train-step throughput for the device check.
//
//   hetsgd_gpu_bench ceilings [L H B]       copy bandwidth (D2D, pinned H2D and D2H) and cuBLAS
//                                           GEMM rates, FP32 / TF32 / BF16: the card's peak
//                                           shape (NN, 8192^3) and the output layer's own three
//                                           GEMMs for L labels, hidden H, batch B (default
//                                           670091 128 128: forward TN L x B x H, weight
//                                           gradient NT H x L x B, input gradient NN H x B x L),
//                                           random data, every call checked, one spot-check each
//   hetsgd_gpu_bench train SCALE BATCH SEC  CudaDevice::train_step samples/s and peak GPU memory
//                                           on amazon-670k-shaped synthetic data (hidden 128,
//                                           Adam, lr 5e-4), FP32 and TF32
//
// Prints one CSV line per measurement, `key,value,unit`, on stdout. Timings are CUDA events
// around each call, the median of several after warm-up.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "core/random.h"
#include "datasets/synthetic.h"
#include "kernels/registry.h"

namespace {

// A tool's main: failures end the program with the failing call named.
void check_cuda(cudaError_t st, const char* what) {
  if (st != cudaSuccess) {
    std::fprintf(stderr, "gpu_bench: %s -> %s\n", what, cudaGetErrorString(st));
    std::exit(1);
  }
}
void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gpu_bench: %s -> cuBLAS status %d\n", what, static_cast<int>(st));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of `run` (enqueued on the legacy stream), median of `reps` after 2 warm-ups.
template <class F>
double time_ms(F&& run, int reps) {
  cudaEvent_t t0, t1;
  check_cuda(cudaEventCreate(&t0), "cudaEventCreate");
  check_cuda(cudaEventCreate(&t1), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    check_cuda(cudaEventRecord(t0), "cudaEventRecord");
    run();
    check_cuda(cudaEventRecord(t1), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(t1), "cudaEventSynchronize");
    check_cuda(cudaGetLastError(), "timed work");
    float m = 0.0f;
    check_cuda(cudaEventElapsedTime(&m, t0, t1), "cudaEventElapsedTime");
    ms.push_back(m);
  }
  check_cuda(cudaEventDestroy(t0), "cudaEventDestroy");
  check_cuda(cudaEventDestroy(t1), "cudaEventDestroy");
  return median(ms);
}

void copy_ceilings() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr, *h = nullptr;
  check_cuda(cudaMalloc(&a, bytes), "cudaMalloc");
  check_cuda(cudaMalloc(&b, bytes), "cudaMalloc");
  check_cuda(cudaMallocHost(&h, bytes / 4), "cudaMallocHost");
  check_cuda(cudaMemset(a, 0x5a, bytes), "cudaMemset");
  std::memset(h, 0x3c, bytes / 4);
  const double d2d =
      time_ms([&] { check_cuda(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "D2D"); }, 10);
  const double h2d =
      time_ms([&] { check_cuda(cudaMemcpy(a, h, bytes / 4, cudaMemcpyHostToDevice), "H2D"); }, 5);
  const double d2h =
      time_ms([&] { check_cuda(cudaMemcpy(h, a, bytes / 4, cudaMemcpyDeviceToHost), "D2H"); }, 5);
  // A device copy reads and writes every byte: both count towards memory bandwidth.
  std::printf("copy_d2d_read_plus_write,%.0f,GB/s\n", 2.0 * bytes / (d2d * 1e-3) / 1e9);
  std::printf("copy_h2d_pinned,%.1f,GB/s\n", bytes / 4.0 / (h2d * 1e-3) / 1e9);
  std::printf("copy_d2h_pinned,%.1f,GB/s\n", bytes / 4.0 / (d2h * 1e-3) / 1e9);
  check_cuda(cudaFree(a), "cudaFree");
  check_cuda(cudaFree(b), "cudaFree");
  check_cuda(cudaFreeHost(h), "cudaFreeHost");
}

// Round-to-nearest-even float -> bfloat16 bits (finite inputs).
std::uint16_t to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
float from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

enum class Precision { kFp32, kTf32, kBf16 };

// C (m x n, column-major) = op(A) op(B) with op(A) m x k and op(B) k x n. The storage of A and
// B follows the op: "NT" stores B as n x k, "TN" stores A as k x m. Random data in [-1, 1).
void gemm_case(cublasHandle_t handle, Precision p, const char* key, const char* ops, int m, int n,
               int k) {
  const bool ta = ops[0] == 'T', tb = ops[1] == 'T';
  const size_t na = static_cast<size_t>(m) * k, nb = static_cast<size_t>(k) * n;
  std::vector<float> ha(na), hb(nb);
  for (size_t i = 0; i < na; ++i) ha[i] = 2.0f * hetsgd::uniform01(11, i) - 1.0f;
  for (size_t i = 0; i < nb; ++i) hb[i] = 2.0f * hetsgd::uniform01(12, i) - 1.0f;
  const bool bf16 = p == Precision::kBf16;
  const size_t elem = bf16 ? 2 : 4;
  void *da = nullptr, *db = nullptr;
  float* dc = nullptr;
  check_cuda(cudaMalloc(&da, na * elem), "cudaMalloc");
  check_cuda(cudaMalloc(&db, nb * elem), "cudaMalloc");
  check_cuda(cudaMalloc(&dc, sizeof(float) * m * n), "cudaMalloc");
  if (bf16) {
    std::vector<std::uint16_t> a16(na), b16(nb);
    for (size_t i = 0; i < na; ++i) a16[i] = to_bf16(ha[i]), ha[i] = from_bf16(a16[i]);
    for (size_t i = 0; i < nb; ++i) b16[i] = to_bf16(hb[i]), hb[i] = from_bf16(b16[i]);
    check_cuda(cudaMemcpy(da, a16.data(), na * 2, cudaMemcpyHostToDevice), "upload A");
    check_cuda(cudaMemcpy(db, b16.data(), nb * 2, cudaMemcpyHostToDevice), "upload B");
  } else {
    check_cuda(cudaMemcpy(da, ha.data(), na * 4, cudaMemcpyHostToDevice), "upload A");
    check_cuda(cudaMemcpy(db, hb.data(), nb * 4, cudaMemcpyHostToDevice), "upload B");
  }
  // Poison C: an output the GEMM did not write shows in the spot-check.
  check_cuda(cudaMemset(dc, 0xff, sizeof(float) * m * n), "cudaMemset");
  const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t ct =
      p == Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const int lda = ta ? k : m, ldb = tb ? n : k;
  const float one = 1.0f, zero = 0.0f;
  auto run = [&] {
    check_cublas(cublasGemmEx(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                              tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &one, da, t, lda, db, t, ldb,
                              &zero, dc, CUDA_R_32F, m, ct, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  };
  const double ms = time_ms(run, 10);
  // Spot-check a few elements against float64 on the host (operands as the GPU saw them).
  std::vector<float> hc(static_cast<size_t>(m) * n);
  check_cuda(cudaMemcpy(hc.data(), dc, hc.size() * 4, cudaMemcpyDeviceToHost), "download C");
  double worst = 0.0;
  for (int s = 0; s < 16; ++s) {
    const int i = (s * 7919) % m, j = (s * 104729) % n;
    double want = 0.0, scale = 0.0;
    for (int q = 0; q < k; ++q) {
      const double a = ha[ta ? static_cast<size_t>(i) * k + q : static_cast<size_t>(q) * m + i];
      const double b = hb[tb ? static_cast<size_t>(q) * n + j : static_cast<size_t>(j) * k + q];
      want += a * b;
      scale += std::fabs(a * b);
    }
    const double got = hc[static_cast<size_t>(j) * m + i];
    worst = std::max(worst, std::isfinite(got) ? std::fabs(got - want) / scale : 1.0);
  }
  const char* pname = p == Precision::kFp32 ? "fp32" : p == Precision::kTf32 ? "tf32" : "bf16";
  const double tol = p == Precision::kFp32 ? 1e-5 : p == Precision::kTf32 ? 2e-3 : 1e-2;
  std::printf("gemm_%s_%s,%.1f,TFLOP/s\n", pname, key,
              2.0 * m * static_cast<double>(n) * k / (ms * 1e-3) / 1e12);
  if (worst > tol) std::printf("gemm_%s_%s_check,FAILED %.2e,relative\n", pname, key, worst);
  check_cuda(cudaFree(da), "cudaFree");
  check_cuda(cudaFree(db), "cudaFree");
  check_cuda(cudaFree(dc), "cudaFree");
}

// The card's peak (a large square NN product) and the three GEMMs of an output layer of
// `labels` x `hidden` at batch `batch`, in the storage orders kernels/cuda/dense.cu uses.
void gemm_ceilings(int labels, int hidden, int batch) {
  cublasHandle_t handle;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  std::printf("model_labels,%d,labels\n", labels);
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    gemm_case(handle, p, "peak", "NN", 8192, 8192, 8192);
    gemm_case(handle, p, "model_fwd", "TN", labels, batch, hidden);
    gemm_case(handle, p, "model_dw", "NT", hidden, labels, batch);
    gemm_case(handle, p, "model_dx", "NN", hidden, batch, labels);
  }
  check_cublas(cublasDestroy(handle), "cublasDestroy");
}

size_t used_bytes() {
  size_t free = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total - free;
}

void train(double scale, int batch, double seconds) {
  const hetsgd::datasets::SyntheticSpec spec =
      hetsgd::datasets::scale_rows(hetsgd::datasets::synthetic_preset("amazon-670k"), scale);
  const auto data = hetsgd::datasets::generate_synthetic(spec, 1);
  const hetsgd::Dataset& train = data.first;
  std::printf("train_data,amazon-670k x%.3f: %lld rows %lld features %lld labels,shape\n", scale,
              static_cast<long long>(train.rows()), static_cast<long long>(train.num_features),
              static_cast<long long>(train.num_labels));
  for (bool tf32 : {false, true}) {
    hetsgd::ModelConfig config;
    config.num_features = train.num_features;
    config.num_labels = train.num_labels;
    config.hidden = {128};
    config.optimizer.kind = hetsgd::OptimizerKind::kAdam;
    hetsgd::DeviceOptions options;
    options.tf32 = tf32;
    const size_t base = used_bytes();
    size_t peak = base;
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
    for (int i = 0; i < 5; ++i) {  // warm-up: allocations, cuBLAS/cuSPARSE plans
      next();
      dev->train_step(b, 5e-4f);
    }
    peak = std::max(peak, used_bytes());
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0.0;
    float loss = 0.0f;
    while (elapsed < seconds) {
      next();
      loss = dev->train_step(b, 5e-4f);
      samples += batch;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    peak = std::max(peak, used_bytes());
    const char* mode = tf32 ? "tf32" : "fp32";
    std::printf("train_step_%s_b%d,%.0f,samples/s\n", mode, batch, samples / elapsed);
    std::printf("train_step_%s_peak_gpu_mem,%.0f,MiB\n", mode, (peak - base) / 1048576.0);
    std::printf("train_step_%s_last_loss,%.4f,loss\n", mode, loss);
    if (!std::isfinite(loss)) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (hetsgd::cuda_device_count() < 1) {
    std::fprintf(stderr, "gpu_bench: no CUDA device\n");
    return 1;
  }
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "ceilings") {
    copy_ceilings();
    gemm_ceilings(argc > 2 ? std::atoi(argv[2]) : 670091, argc > 3 ? std::atoi(argv[3]) : 128,
                  argc > 4 ? std::atoi(argv[4]) : 128);
    return 0;
  }
  if (mode == "train") {
    train(argc > 2 ? std::atof(argv[2]) : 0.02, argc > 3 ? std::atoi(argv[3]) : 128,
          argc > 4 ? std::atof(argv[4]) : 8.0);
    return 0;
  }
  std::fprintf(stderr,
               "usage: hetsgd_gpu_bench ceilings [labels] [hidden] [batch] | train [scale] [batch] "
               "[seconds]\n");
  return 2;
}
