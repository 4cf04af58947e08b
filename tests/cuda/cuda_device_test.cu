// CudaDevice internals that the host API cannot reach: the label chunking of predict_topk, the
// refusal of a replica larger than the GPU's free memory, and the estimate behind it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"
#include "datasets/synthetic.h"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/registry.h"
#include "tests/common/gpu_test.h"
#include "tests/common/small_models.h"

namespace hetsgd::cuda {
namespace {

constexpr std::uint64_t kSeed = 5150;

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { test::require_cuda_devices(1); }
};

// Chunks of 1, 7 and 64 labels (L = 301, so the last chunk is partial) against the CPU
// device's unchunked scoring: same top-k ids, scores and loss.
TEST_F(CudaDeviceTest, ChunkedPredictMatchesCpu) {
  for (Loss loss : {Loss::kSoftmax, Loss::kBce}) {
    SCOPED_TRACE(to_string(loss));
    ModelConfig c = test::fixed_model();
    c.num_features = 500;
    c.num_labels = 301;
    c.hidden = {24};
    c.loss = loss;
    c.optimizer.kind = OptimizerKind::kSgd;
    c.seed = kSeed;
    auto ref = make_device(DeviceId::cpu(), c);
    CudaDevice d(0, c, DeviceOptions{});
    const CsrBatch b = datasets::power_law_batch(40, c.num_labels, kSeed, c.num_features);
    const int k = 7;
    std::vector<col_t> ref_ids(static_cast<size_t>(b.rows() * k)), ids(ref_ids.size());
    std::vector<float> ref_scores(ref_ids.size()), scores(ref_ids.size());
    const float ref_loss = ref->predict_topk(b, k, ref_ids.data(), ref_scores.data());
    for (index_t chunk : {index_t{1}, index_t{7}, index_t{64}, index_t{0}}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk));
      d.set_score_chunk(chunk);
      const float got = d.predict_topk(b, k, ids.data(), scores.data());
      EXPECT_NEAR(got, ref_loss, 1e-5 * std::fabs(ref_loss));
      EXPECT_EQ(ids, ref_ids);
      for (size_t i = 0; i < scores.size(); ++i) {
        EXPECT_NEAR(scores[i], ref_scores[i], 1e-5 * (1.0 + std::fabs(ref_scores[i]))) << i;
      }
    }
  }
}

// Tests that compare the GPU's device-wide free memory hold only when no other process
// allocates on it meanwhile: they compare only with HETSGD_GPU_TEST_ALONE=1 (the device check
// runs them alone, after the other tests), and otherwise check only what a single process sees.
bool alone_on_gpu() {
  const char* v = std::getenv("HETSGD_GPU_TEST_ALONE");
  return v != nullptr && std::string(v) == "1";
}

// A model too large for the GPU is refused before anything is allocated, with the numbers;
// a hundred refusals leave the GPU as it was and a normal device still builds.
TEST_F(CudaDeviceTest, FailedConstructionReleasesEverything) {
  ModelConfig huge = test::fixed_model();
  huge.num_features = 2'000'000'000;  // 2e9 x 64 floats = 512 GB of weights
  huge.num_labels = 10;
  huge.hidden = {64};
  huge.optimizer.kind = OptimizerKind::kSgd;
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  try {
    CudaDevice d(0, huge, DeviceOptions{});
    FAIL() << "a 512 GB replica was accepted";
  } catch (const MemoryBudgetExceeded& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("of GPU memory"), std::string::npos) << what;
    EXPECT_NE(what.find("are free"), std::string::npos) << what;
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_THROW(CudaDevice(0, huge, DeviceOptions{}), MemoryBudgetExceeded);
  }
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  // cuBLAS/cuSPARSE handles hold a few MB each: 100 leaked ones would show.
  if (alone_on_gpu()) EXPECT_GE(free_after + (size_t{64} << 20), free_before);
  ModelConfig small = huge;
  small.num_features = 100;
  EXPECT_NO_THROW(CudaDevice(0, small, DeviceOptions{}));
}

// The estimate (kernels/cuda/api.h) bounds what a replica really takes after a training step
// and an evaluation at the estimated batch, and is not wildly above it.
TEST_F(CudaDeviceTest, EstimateCoversAllocation) {
  if (!alone_on_gpu()) GTEST_SKIP() << "compares device-wide free memory: HETSGD_GPU_TEST_ALONE=1";
  ModelConfig c = test::fixed_model();
  c.num_features = 200'000;
  c.num_labels = 50'000;
  c.hidden = {256};
  c.seed = kSeed;
  const index_t rows = 256;
  const CsrBatch b = datasets::power_law_batch(rows, c.num_labels, kSeed, c.num_features);
  const index_t nnz = b.x_indptr.back() - b.x_indptr.front();
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  {
    CudaDevice d(0, c, DeviceOptions{});
    d.train_step(b, 1e-3f);
    std::vector<col_t> ids(static_cast<size_t>(rows * 5));
    std::vector<float> scores(ids.size());
    d.predict_topk(b, 5, ids.data(), scores.data());
    d.synchronize();
    ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  }
  const std::uint64_t used = free_before - free_after;
  const std::uint64_t estimate = estimate_replica_bytes(c, rows, nnz);
  EXPECT_LE(used, estimate) << "used " << used << " estimate " << estimate;
  EXPECT_LE(estimate, 2 * used + kLibraryAllowanceBytes) << "used " << used;
}

}  // namespace
}  // namespace hetsgd::cuda
