// CUDA kernels against the host formulas of core/math (the CPU backend's code).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/math/optimizer_update.h"
#include "core/math/sigmoid_bce.h"
#include "core/math/softmax_ce.h"
#include "core/math/topk.h"
#include "core/random.h"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/sparse.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/update.cuh"
#include "tests/common/gpu_test.h"

namespace hetsgd::cuda {
namespace {

constexpr std::uint64_t kSeed = 4242;
constexpr float kRelTol = 1e-5f;  // block reductions sum in another order than the host loop

/// Element-wise relative check: |got - want| <= rel * |want| + floor_rel * scale, with `scale`
/// the largest |want| of the row (or vector). An absolute bound alone would pass a softmax
/// gradient of 1e-9 that came out as 0 or with the wrong sign; the floor only covers elements
/// that are rounding noise next to the row's largest ones.
void expect_rel_near(const std::vector<float>& got, const std::vector<float>& want, index_t row,
                     double rel, double floor_rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r0 = 0; r0 < want.size(); r0 += static_cast<size_t>(row)) {
    double scale = 0.0;
    for (size_t i = r0; i < r0 + row; ++i) scale = std::max(scale, std::fabs(double{want[i]}));
    for (size_t i = r0; i < r0 + row; ++i) {
      const double tol = rel * std::fabs(double{want[i]}) + floor_rel * scale;
      ASSERT_LE(std::fabs(double{got[i]} - want[i]), tol)
          << what << " element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& v) {
  DeviceBuffer<T> d(std::max<size_t>(v.size(), 1));
  if (!v.empty()) {
    HETSGD_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  return d;
}

template <typename T>
std::vector<T> download(const DeviceBuffer<T>& d, size_t n) {
  std::vector<T> v(n);
  if (n > 0) {
    HETSGD_CUDA_CHECK(cudaMemcpy(v.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return v;
}

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override { test::require_cuda_devices(1); }
  // rows x n logits in [-4, 4) with deliberate ties (a coarse grid).
  static std::vector<float> logits(index_t rows, index_t n, std::uint64_t seed) {
    std::vector<float> z(static_cast<size_t>(rows * n));
    for (size_t i = 0; i < z.size(); ++i)
      z[i] = std::floor(uniform01(seed, i) * 64.0f) / 8.0f - 4.0f;
    return z;
  }
  // 0..3 distinct labels per row.
  static void labels(index_t rows, index_t n, std::vector<int>* indptr, std::vector<col_t>* ids) {
    indptr->assign(1, 0);
    ids->clear();
    for (index_t r = 0; r < rows; ++r) {
      const int count = static_cast<int>(uniform01(kSeed + 1, r) * 4.0f);
      for (int i = 0; i < count; ++i) ids->push_back(static_cast<col_t>((r * 7 + i * 13) % n));
      indptr->push_back(static_cast<int>(ids->size()));
    }
  }
  // A rows x n loss problem on the device: logits(seed), labels() and a row-loss buffer. The
  // kernels overwrite dz with the gradient; z keeps the logits for the host reference.
  struct LossProblem {
    LossProblem(index_t rows, index_t n, std::uint64_t seed)
        : z(logits(rows, n, seed)), dz(upload(z)), loss(rows) {
      labels(rows, n, &yp, &yi);
      dyp = upload(yp);
      dyi = upload(yi);
    }
    std::vector<float> z;
    std::vector<int> yp;
    std::vector<col_t> yi;
    DeviceBuffer<float> dz, loss;
    DeviceBuffer<int> dyp;
    DeviceBuffer<col_t> dyi;
  };
  // Columns [c0, c0 + width) of a rows x n matrix as a rows x width block of their own, as the
  // device scores a chunk.
  static std::vector<float> column_block(const std::vector<float>& z, index_t rows, index_t n,
                                         index_t c0, index_t width) {
    std::vector<float> block(static_cast<size_t>(rows * width));
    for (index_t r = 0; r < rows; ++r) {
      std::copy_n(z.begin() + r * n + c0, width, block.begin() + r * width);
    }
    return block;
  }
};

TEST_F(CudaKernels, TopkMatchesHostInsertion) {
  const index_t rows = 9, n = 1000;
  std::vector<float> z = logits(rows, n, kSeed);
  z[5] = NAN;  // never selected
  for (int k : {1, 5, detail::kMaxTopK}) {
    SCOPED_TRACE("k " + std::to_string(k));
    auto dz = upload(z);
    DeviceBuffer<float> ds(rows * k);
    DeviceBuffer<col_t> di(rows * k);
    detail::launch_topk(dz.data(), rows, n, k, ds.data(), di.data(), nullptr);
    HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> hs(rows * k);
    std::vector<col_t> hi(rows * k);
    for (index_t r = 0; r < rows; ++r) {
      math::topk_row(z.data() + r * n, n, k, hs.data() + r * k, hi.data() + r * k);
    }
    EXPECT_EQ(download(di, rows * k), hi);
    EXPECT_EQ(download(ds, rows * k), hs);
  }
}

TEST_F(CudaKernels, SoftmaxCrossEntropyMatchesCoreMath) {
  const index_t rows = 6, n = 3000;
  LossProblem p(rows, n, kSeed + 2);
  const float scale = 0.25f;
  detail::launch_softmax_ce(p.dz.data(), rows, n, p.dyp.data(), p.dyi.data(), scale, true,
                            p.loss.data(), nullptr);
  HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> g = download(p.dz, p.z.size());
  const std::vector<float> l = download(p.loss, rows);
  std::vector<float> hg(p.z.size());
  for (index_t r = 0; r < rows; ++r) {
    const float hl = math::softmax_ce_row(p.z.data() + r * n, n, p.yi.data() + p.yp[r],
                                          p.yp[r + 1] - p.yp[r], scale, hg.data() + r * n);
    EXPECT_NEAR(l[r], hl, kRelTol * std::fabs(hl) + 1e-7f) << "row " << r;
  }
  // exp() on the GPU and the host differ by an ulp or two: 1e-5 of each element, plus 1e-6 of
  // the row's largest gradient for elements whose softmax share is at float noise.
  expect_rel_near(g, hg, n, 1e-5, 1e-6, "softmax gradient");
}

// The training step's softmax (rows split into segments, bias added on the fly) against
// core/math on the biased logits, and against the one-block-per-row kernel with smoothing;
// 70,000 labels make 18 segments per row, a row without labels gets loss and gradient 0.
TEST_F(CudaKernels, SegmentedSoftmaxWithBiasMatchesCoreMath) {
  const index_t rows = 4, n = 70'000;
  ASSERT_GT(detail::softmax_segments(n), 1);
  const std::vector<float> z = logits(rows, n, kSeed + 12);
  std::vector<float> bias(n);
  for (index_t j = 0; j < n; ++j) bias[j] = uniform01(kSeed + 13, j) - 0.5f;
  std::vector<int> yp;
  std::vector<col_t> yi;
  labels(rows - 1, n, &yp, &yi);
  yp.push_back(yp.back());  // the last row has no label
  std::vector<float> zb(z.size());
  for (index_t r = 0; r < rows; ++r) {
    for (index_t j = 0; j < n; ++j) zb[r * n + j] = z[r * n + j] + bias[j];
  }
  auto dyp = upload(yp);
  auto dyi = upload(yi);
  auto dbias = upload(bias);
  const float scale = 0.5f;
  for (float smoothing : {0.0f, 0.1f}) {
    SCOPED_TRACE("smoothing " + std::to_string(smoothing));
    auto dz = upload(z);
    auto dref = upload(zb);
    DeviceBuffer<float> loss(rows), ref_loss(rows);
    detail::SoftmaxScratch scratch;
    detail::launch_softmax_ce_rows(dz.data(), dbias.data(), rows, n, dyp.data(), dyi.data(), scale,
                                   true, loss.data(), scratch, nullptr, smoothing);
    detail::launch_softmax_ce(dref.data(), rows, n, dyp.data(), dyi.data(), scale, true,
                              ref_loss.data(), nullptr, smoothing);
    HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> g = download(dz, z.size());
    const std::vector<float> l = download(loss, rows);
    const std::vector<float> rg = download(dref, z.size());
    const std::vector<float> rl = download(ref_loss, rows);
    for (index_t r = 0; r < rows; ++r) {
      EXPECT_NEAR(l[r], rl[r], kRelTol * std::fabs(rl[r]) + 1e-6f) << "row " << r;
    }
    EXPECT_EQ(l[rows - 1], 0.0f);
    expect_rel_near(g, rg, n, 1e-5, 1e-6, "segmented softmax gradient vs one block per row");
    if (smoothing == 0.0f) {
      std::vector<float> hg(z.size());
      for (index_t r = 0; r < rows; ++r) {
        const float hl = math::softmax_ce_row(zb.data() + r * n, n, yi.data() + yp[r],
                                              yp[r + 1] - yp[r], scale, hg.data() + r * n);
        EXPECT_NEAR(l[r], hl, kRelTol * std::fabs(hl) + 1e-6f) << "row " << r;
      }
      expect_rel_near(g, hg, n, 1e-5, 1e-6, "segmented softmax gradient vs core/math");
    }
  }
}

TEST_F(CudaKernels, BceMatchesCoreMath) {
  const index_t rows = 5, n = 700;
  LossProblem p(rows, n, kSeed + 3);
  const float scale = 1.0f / (rows * n);
  detail::launch_bce(p.dz.data(), rows, n, p.dyp.data(), p.dyi.data(), scale, true, p.loss.data(),
                     nullptr);
  HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> g = download(p.dz, p.z.size());
  const std::vector<float> l = download(p.loss, rows);
  for (index_t r = 0; r < rows; ++r) {
    std::vector<float> y(n, 0.0f);
    for (int i = p.yp[r]; i < p.yp[r + 1]; ++i) y[p.yi[i]] = 1.0f;
    double hl = 0.0;
    for (index_t j = 0; j < n; ++j) {
      const float x = p.z[r * n + j];
      hl += math::bce_loss(x, y[j]);
      const float want = scale * math::bce_grad(x, y[j]);
      ASSERT_NEAR(g[r * n + j], want, 1e-5 * std::fabs(want)) << "element " << r * n + j;
    }
    EXPECT_NEAR(l[r], hl / n, kRelTol * std::fabs(hl / n));
  }
}

TEST_F(CudaKernels, CompactFeaturesAndScatterMatchHost) {
  // 4 rows, shared features, h = 3.
  const std::vector<col_t> cols = {9, 2, 5, 2, 9, 40, 5, 2};
  const std::vector<int> row_of = {0, 0, 1, 1, 2, 2, 3, 3};
  const std::vector<float> val = {1, 2, 3, 4, 5, 6, 7, 8};
  const index_t nnz = 8, h = 3;
  std::vector<float> dh(4 * h);
  for (size_t i = 0; i < dh.size(); ++i) dh[i] = uniform01(kSeed + 4, i) - 0.5f;
  auto dcols = upload(cols);
  DeviceBuffer<col_t> uniq(nnz), compact(nnz);
  DeviceBuffer<int> count(1);
  detail::SparseScratch scratch;
  detail::compact_features(dcols.data(), nnz, 41, uniq.data(), compact.data(), count.data(),
                           scratch, nullptr);
  HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
  const index_t u = download(count, 1)[0];
  ASSERT_EQ(u, 4);
  EXPECT_EQ(download(uniq, 4), (std::vector<col_t>{2, 5, 9, 40}));
  EXPECT_EQ(download(compact, nnz), (std::vector<col_t>{2, 0, 1, 0, 2, 3, 1, 0}));
  auto drow = upload(row_of);
  auto dval = upload(val);
  auto ddh = upload(dh);
  DeviceBuffer<float> g(u * h);
  HETSGD_CUDA_CHECK(cudaMemset(g.data(), 0, u * h * sizeof(float)));
  detail::launch_scatter_rows(drow.data(), compact.data(), count.data(), dval.data(), nnz,
                              ddh.data(), h, 0.5f, g.data(), scratch, nullptr);
  HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<col_t> hc = download(compact, nnz);
  std::vector<float> expect(u * h, 0.0f);
  for (index_t e = 0; e < nnz; ++e) {
    for (index_t j = 0; j < h; ++j) expect[hc[e] * h + j] += 0.5f * val[e] * dh[row_of[e] * h + j];
  }
  const std::vector<float> got = download(g, u * h);
  // The segmented sum is the serial loop, bit for bit, and so is every rerun (--deterministic).
  EXPECT_EQ(got, expect);
  HETSGD_CUDA_CHECK(cudaMemset(g.data(), 0, u * h * sizeof(float)));
  detail::launch_scatter_rows(drow.data(), compact.data(), count.data(), dval.data(), nnz,
                              ddh.data(), h, 0.5f, g.data(), scratch, nullptr);
  HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download(g, u * h), got);
}

TEST_F(CudaKernels, LazyAdamRowsMatchCoreMath) {
  const index_t d = 10, h = 4;
  std::vector<float> w(d * h), g(d * h), m(d * h, 0.01f), v(d * h, 0.02f);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = uniform01(kSeed + 5, i) - 0.5f;
    g[i] = uniform01(kSeed + 6, i) - 0.5f;
  }
  const std::vector<col_t> rows = {1, 7, 8};
  auto dw = upload(w);
  auto dg = upload(g);
  auto dm = upload(m);
  auto dv = upload(v);
  auto dr = upload(rows);
  auto dcount = upload(std::vector<int>{3});
  detail::UpdateArgs a;
  a.lr = 0.01f;
  a.weight_decay = 0.1f;
  a.step = 3;
  // Capacity 10 rows, 3 real ones (the count lives on the device): rows past it stay untouched.
  detail::launch_update_rows(dw.data(), dg.data(), false, dm.data(), dv.data(), dr.data(),
                             dcount.data(), d, h, a, nullptr);
  HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
  const math::AdamStep s = math::adam_step(a.lr, a.beta1, a.beta2, a.step);
  for (col_t r : rows) {
    for (index_t j = 0; j < h; ++j) {
      const index_t p = r * h + j;
      math::adam_update(w[p], m[p], v[p], g[p], s, a.beta1, a.beta2, a.eps, a.weight_decay);
    }
  }
  // nvcc contracts a*b+c into FMAs, the host compiler may not: allow a few ulps.
  const std::vector<float> gw = download(dw, w.size()), gm = download(dm, m.size()),
                           gv = download(dv, v.size());
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_NEAR(gw[i], w[i], 1e-6f) << i;
    EXPECT_NEAR(gm[i], m[i], 1e-7f) << i;
    EXPECT_NEAR(gv[i], v[i], 1e-7f) << i;
  }
}

TEST_F(CudaKernels, ChunkedTopkEqualsWholeRow) {
  const index_t rows = 7, n = 2500;
  const std::vector<float> z = logits(rows, n, kSeed + 7);  // many ties across chunks
  const int k = 10;
  auto dz = upload(z);
  DeviceBuffer<float> ws(rows * k), cs(rows * k);
  DeviceBuffer<col_t> wi(rows * k), ci(rows * k);
  detail::launch_topk(dz.data(), rows, n, k, ws.data(), wi.data(), nullptr);
  for (index_t chunk : {index_t{1}, index_t{9}, index_t{640}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    for (index_t c0 = 0; c0 < n; c0 += chunk) {
      const index_t width = std::min(chunk, n - c0);
      auto db = upload(column_block(z, rows, n, c0, width));
      detail::launch_topk_chunk(db.data(), rows, width, c0, k, c0 == 0, cs.data(), ci.data(),
                                nullptr);
      HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
    }
    EXPECT_EQ(download(ci, rows * k), download(wi, rows * k));
    EXPECT_EQ(download(cs, rows * k), download(ws, rows * k));
  }
}

TEST_F(CudaKernels, StreamedLossEqualsWholeRow) {
  const index_t rows = 6, n = 3001;
  std::vector<float> z = logits(rows, n, kSeed + 8);
  for (index_t r = 0; r < rows; ++r) z[r * n + (r * 997) % n] = 30.0f;  // a late row maximum
  std::vector<int> yp;
  std::vector<col_t> yi;
  labels(rows, n, &yp, &yi);
  auto dyp = upload(yp);
  auto dyi = upload(yi);
  for (Loss loss : {Loss::kSoftmax, Loss::kBce}) {
    SCOPED_TRACE(to_string(loss));
    auto dz = upload(z);
    DeviceBuffer<float> whole(rows), streamed(rows);
    if (loss == Loss::kSoftmax) {
      detail::launch_softmax_ce(dz.data(), rows, n, dyp.data(), dyi.data(), 1.0f, false,
                                whole.data(), nullptr);
    } else {
      detail::launch_bce(dz.data(), rows, n, dyp.data(), dyi.data(), 1.0f, false, whole.data(),
                         nullptr);
    }
    DeviceBuffer<detail::ScoreState> state(rows);
    const index_t chunk = 512;
    for (index_t c0 = 0; c0 < n; c0 += chunk) {
      const index_t width = std::min(chunk, n - c0);
      auto db = upload(column_block(z, rows, n, c0, width));
      detail::launch_score_chunk(db.data(), rows, width, c0, dyp.data(), dyi.data(), loss, c0 == 0,
                                 state.data(), nullptr);
      HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
    }
    detail::launch_score_finish(state.data(), rows, n, dyp.data(), loss, streamed.data(), nullptr);
    HETSGD_CUDA_CHECK(cudaDeviceSynchronize());
    expect_rel_near(download(streamed, rows), download(whole, rows), 1, 1e-5, 0.0, "row loss");
  }
}

}  // namespace
}  // namespace hetsgd::cuda
