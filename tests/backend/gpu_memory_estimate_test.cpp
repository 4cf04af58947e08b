// estimate_replica_bytes (kernels/cuda/api.h): the GPU memory of one CUDA replica from the
// shapes alone. Plain arithmetic, so it runs in every build.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/param_layout.h"
#include "kernels/cuda/api.h"
#include "tests/common/small_models.h"

namespace hetsgd::cuda {
namespace {

ModelConfig amazon_shaped(OptimizerKind kind) {
  ModelConfig c = test::fixed_model();
  c.num_features = 135'909;
  c.num_labels = 670'091;
  c.hidden = {128};
  c.optimizer.kind = kind;
  return c;
}

// Adam: parameters, gradient and two moments, plus the batch's logits and the allowance.
TEST(GpuMemoryEstimate, CountsParametersStateAndLogits) {
  const ModelConfig c = amazon_shaped(OptimizerKind::kAdam);
  const std::uint64_t params = static_cast<std::uint64_t>(ParamLayout(c).total()) * 4;
  const std::uint64_t logits = std::uint64_t{256} * 670'091 * 4;
  const std::uint64_t e = estimate_replica_bytes(c, 256, 256 * 128);
  EXPECT_GE(e, 4 * params + logits + kLibraryAllowanceBytes);
  EXPECT_LE(e, 4 * params + logits + kLibraryAllowanceBytes + (std::uint64_t{128} << 20));
}

// Plain SGD keeps no moments; momentum keeps one.
TEST(GpuMemoryEstimate, OptimiserStateFollowsTheOptimiser) {
  ModelConfig sgd = amazon_shaped(OptimizerKind::kSgd);
  ModelConfig momentum = sgd;
  momentum.optimizer.momentum = 0.9f;
  const std::uint64_t params = static_cast<std::uint64_t>(ParamLayout(sgd).total()) * 4;
  const std::uint64_t e_sgd = estimate_replica_bytes(sgd, 128, 128 * 100);
  EXPECT_EQ(estimate_replica_bytes(momentum, 128, 128 * 100), e_sgd + params);
  EXPECT_EQ(estimate_replica_bytes(amazon_shaped(OptimizerKind::kAdam), 128, 128 * 100),
            e_sgd + 2 * params);
}

// Larger batches cost more; absurd shapes saturate instead of wrapping to a small number.
TEST(GpuMemoryEstimate, GrowsWithTheBatchAndSaturates) {
  const ModelConfig c = amazon_shaped(OptimizerKind::kAdam);
  EXPECT_LT(estimate_replica_bytes(c, 64, 64 * 100), estimate_replica_bytes(c, 512, 512 * 100));
  ModelConfig huge = c;
  huge.num_features = 2'000'000'000;
  huge.num_labels = 2'000'000'000;
  huge.hidden = {1 << 20};
  EXPECT_GT(estimate_replica_bytes(huge, 1 << 20, std::int64_t{1} << 40), std::uint64_t{1} << 60);
}

}  // namespace
}  // namespace hetsgd::cuda
