#include "kernels/cpu/dense.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
// dX row blocks of 128: each task packs all of W (out x in), so blocks are as large as a
// 256-row batch split over two threads allows (64-row blocks ran about 20% slower).
constexpr index_t kRowBlock = 128;
// Output-column blocks of the forward and of dW: at most 512 columns, and at least two blocks
// so two threads share even a small layer (bibtex L=159). The block size depends only on
// `out`, never on the thread count, so every element still comes from the same sgemm call.
constexpr index_t kMaxColBlock = 512;
constexpr index_t kColAlign = 16;  // SkylakeX sgemm N unroll: no ragged edge kernels mid-layer

index_t col_block(index_t out) {
  const index_t blocks = std::max<index_t>(2, (out + kMaxColBlock - 1) / kMaxColBlock);
  const index_t per = (out + blocks - 1) / blocks;
  return (per + kColAlign - 1) / kColAlign * kColAlign;
}
}  // namespace

namespace {
// OpenBLAS builds with DYNAMIC_ARCH pick their kernels from the CPUID model number. A release
// older than the CPU (Debian 12 ships 0.3.21, which predates Sapphire Rapids support) falls back
// to its generic SSE3 "Prescott" kernels, about 2x slower than AVX2/AVX-512 ones on the GEMMs
// here. When that happened, the user did not force a core (OPENBLAS_CORETYPE), and the CPU has
// the instructions, re-run OpenBLAS's own dispatcher with the matching core name. This uses the
// library's exported re-initialisation entry points (gotoblas_dynamic_quit / _init), looked up
// at run time so any other BLAS still links; it runs before this process's first BLAS call.
void upgrade_generic_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* core = openblas_get_corename();
  if (core == nullptr || std::string(core) != "Prescott") return;
  const char* want = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    want = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    want = "Haswell";
  }
  if (want == nullptr) return;
  auto quit = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) return;
  setenv("OPENBLAS_CORETYPE", want, 0);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
}
}  // namespace

void ensure_single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    upgrade_generic_openblas_core();
    openblas_set_num_threads(1);
  });
}

std::string blas_core_name() {
  ensure_single_threaded_blas();
  const char* core = openblas_get_corename();
  return core == nullptr ? "unknown" : core;
}

namespace {
// The three products below with W stored [in x out] (`by_out` false) or [out x in] (true, the
// output layer's by-label storage): only the operand's transpose flag, leading dimension and
// the offset of a block of outputs differ, so both layouts share the blocking and its
// fixed summation order.
CBLAS_TRANSPOSE flip(CBLAS_TRANSPOSE t, bool by_out) {
  if (!by_out) return t;
  return t == CblasNoTrans ? CblasTrans : CblasNoTrans;
}

void forward(const float* x, index_t rows, index_t in, index_t out, const float* w, bool by_out,
             const float* b, bool relu, float* y) {
  // Column blocks: each task packs only its own slice of W (with row blocks every task
  // re-packed all of W, which cost as much as a third of the GEMM at batch 128), and X is
  // small (rows x hidden). Every element still sums over all of `in` in one call. The bias is
  // copied in first and accumulated onto with beta = 1: with beta = 0 OpenBLAS runs its own
  // zeroing pass over C, which costs more than the copy.
  for_blocks(out, col_block(out), [&](index_t c0, index_t c1) {
    const index_t nc = c1 - c0;
    for (index_t r = 0; r < rows; ++r) std::memcpy(y + r * out + c0, b + c0, sizeof(float) * nc);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, flip(CblasNoTrans, by_out), static_cast<int>(rows),
                static_cast<int>(nc), static_cast<int>(in), 1.0f, x, static_cast<int>(in),
                by_out ? w + c0 * in : w + c0, static_cast<int>(by_out ? in : out), 1.0f, y + c0,
                static_cast<int>(out));
    if (relu) {
      for (index_t r = 0; r < rows; ++r) vec::relu(y + r * out + c0, nc);
    }
  });
}

void weight_grad(const float* x, const float* dy, index_t rows, index_t in, index_t out,
                 bool by_out, float* dw, float* db) {
  // Column blocks of dW: each block is one sgemm over the whole batch, so no reduction across
  // tasks is needed and the sum over rows has one fixed order.
  for_blocks(out, col_block(out), [&](index_t c0, index_t c1) {
    const auto nc = static_cast<int>(c1 - c0), n_in = static_cast<int>(in);
    if (by_out) {  // dWt block (nc x in) = dY[:, c0:c1]^T X
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nc, n_in, static_cast<int>(rows), 1.0f,
                  dy + c0, static_cast<int>(out), x, n_in, 0.0f, dw + c0 * in, n_in);
    } else {  // dW block (in x nc) = X^T dY[:, c0:c1]
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n_in, nc, static_cast<int>(rows), 1.0f,
                  x, n_in, dy + c0, static_cast<int>(out), 0.0f, dw + c0, static_cast<int>(out));
    }
    std::memset(db + c0, 0, sizeof(float) * (c1 - c0));
    for (index_t r = 0; r < rows; ++r) vec::add_to(db + c0, dy + r * out + c0, c1 - c0);
  });
}

void input_grad(const float* dy, const float* w, bool by_out, const float* x_act, index_t rows,
                index_t in, index_t out, float* dx) {
  for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
    float* dxb = dx + r0 * in;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, flip(CblasTrans, by_out), static_cast<int>(r1 - r0),
                static_cast<int>(in), static_cast<int>(out), 1.0f, dy + r0 * out,
                static_cast<int>(out), w, static_cast<int>(by_out ? in : out), 0.0f, dxb,
                static_cast<int>(in));
    vec::relu_mask(dxb, x_act + r0 * in, (r1 - r0) * in);
  });
}
}  // namespace

void dense_forward(const float* x, index_t rows, index_t in, index_t out, const float* w,
                   const float* b, bool relu, float* y) {
  forward(x, rows, in, out, w, false, b, relu, y);
}

void dense_forward_t(const float* x, index_t rows, index_t in, index_t out, const float* wt,
                     const float* b, bool relu, float* y) {
  forward(x, rows, in, out, wt, true, b, relu, y);
}

void column_sums(const float* d, index_t rows, index_t out, float* db) {
  for_blocks(out, kMaxColBlock / 2, [&](index_t c0, index_t c1) {
    std::memset(db + c0, 0, sizeof(float) * (c1 - c0));
    for (index_t r = 0; r < rows; ++r) vec::add_to(db + c0, d + r * out + c0, c1 - c0);
  });
}

void dense_weight_grad(const float* x, const float* dy, index_t rows, index_t in, index_t out,
                       float* dw, float* db) {
  weight_grad(x, dy, rows, in, out, false, dw, db);
}

void dense_weight_grad_t(const float* x, const float* dy, index_t rows, index_t in, index_t out,
                         float* dwt, float* db) {
  weight_grad(x, dy, rows, in, out, true, dwt, db);
}

void dense_input_grad(const float* dy, const float* w, const float* x_act, index_t rows, index_t in,
                      index_t out, float* dx) {
  input_grad(dy, w, false, x_act, rows, in, out, dx);
}

void dense_input_grad_t(const float* dy, const float* wt, const float* x_act, index_t rows,
                        index_t in, index_t out, float* dx) {
  input_grad(dy, wt, true, x_act, rows, in, out, dx);
}

}  // namespace hetsgd::cpu
