// CUDA with TF32 tensor-core GEMMs (--tf32) against the CPU's float32 reference.
//
// TF32 keeps 10 mantissa bits of each GEMM operand (unit roundoff 2^-11, about 4.9e-4) and
// accumulates in float32, so a product over K terms is off by about 4.9e-4 / sqrt(K) relative
// to its norm on random data: about 3e-4 measured by others at K in the hundreds. The
// tolerance here, kTf32Tol = 3e-3 of each block's norm, allows ten times that; a GEMM in
// plain BF16 (8 bits, about 4e-3) or a wrong operand would exceed it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/backend/parity_fixture.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 3232;
constexpr double kTf32Tol = 3e-3;

// ||a - b|| / ||b|| over a block.
double norm_rel(const std::vector<float>& a, const std::vector<float>& b, index_t off, index_t n) {
  double d = 0.0, r = 0.0;
  for (index_t i = off; i < off + n; ++i) {
    d += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    r += double{b[i]} * b[i];
  }
  return r == 0.0 ? std::sqrt(d) : std::sqrt(d / r);
}

class Tf32Parity : public ::testing::Test {
 protected:
  void SetUp() override { require_cuda_devices(1); }
};

TEST_F(Tf32Parity, GradientAndScoresWithinTf32Rounding) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ModelConfig c = test::fixed_model();
  c.num_features = 2000;
  c.num_labels = 4096;
  c.hidden = {256, 128};  // K = 2000-sparse, 256 and 128 in the GEMMs
  c.optimizer.kind = OptimizerKind::kSgd;
  c.seed = kSeed;
  DeviceOptions tf32;
  tf32.tf32 = true;
  auto ref = make_device(DeviceId::cpu(), c);
  auto d = make_device(DeviceId::cuda(0), c, tf32);
  const CsrBatch b = datasets::power_law_batch(128, c.num_labels, kSeed, c.num_features, 30.0);

  const float ref_loss = ref->gradient(b, 1.0f);
  const float loss = d->gradient(b, 1.0f);
  EXPECT_NEAR(loss, ref_loss, kTf32Tol * std::fabs(ref_loss));
  std::vector<float> rg(static_cast<size_t>(ref->layout().total())), g(rg.size());
  ref->read_gradient(rg.data());
  d->read_gradient(g.data());
  for (const ParamBlock& blk : param_blocks(ref->layout())) {
    EXPECT_LE(norm_rel(g, rg, blk.offset, blk.size), kTf32Tol) << blk.name;
  }

  const int k = 5;
  std::vector<col_t> ref_ids(static_cast<size_t>(b.rows() * k)), ids(ref_ids.size());
  std::vector<float> ref_scores(ref_ids.size()), scores(ref_ids.size());
  ref->predict_topk(b, k, ref_ids.data(), ref_scores.data());
  d->predict_topk(b, k, ids.data(), scores.data());
  EXPECT_LE(norm_rel(scores, ref_scores, 0, static_cast<index_t>(scores.size())), kTf32Tol);
  // Rounding may swap near-ties, never most of the top-1 choices.
  index_t same = 0;
  for (index_t r = 0; r < b.rows(); ++r) same += ids[r * k] == ref_ids[r * k] ? 1 : 0;
  EXPECT_GE(same, b.rows() * 9 / 10);
}

}  // namespace
}  // namespace hetsgd::test
