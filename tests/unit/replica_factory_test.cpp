// The replica factory (kernels/replicas.h): what a run estimates it will hold before it
// starts, at the Amazon-670K shape (what the shortlist saves, what its label index costs,
// host against GPU bytes), and the refusal before any allocation.
#include "kernels/replicas.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "core/engine/train_options.h"
#include "core/memory_budget.h"
#include "kernels/cpu/api.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

MemoryEstimate estimate_training_memory(const ModelConfig& config,
                                        const std::vector<DeviceId>& devices,
                                        const TrainOptions& options) {
  const RunFootprint footprint = options.footprint();
  return estimate_replica_bytes(config, devices, &footprint);
}

ModelConfig amazon_shape(OutputLayer layer, OptimizerKind out_optimizer, int hard_negatives) {
  ModelConfig c = test::fixed_model();
  c.num_features = 135909;
  c.num_labels = 670091;
  c.hidden = {128};
  c.output_layer = layer;
  c.shortlist.optimizer = out_optimizer;
  c.shortlist.hard_negatives = hard_negatives;
  return c;
}

TEST(MemoryEstimate, ShortlistCountsItsOwnOptimiserAndIndex) {
  const std::vector<DeviceId> one{DeviceId::cpu(0)};
  TrainOptions o;
  o.keep_best = false;
  const std::uint64_t out_bytes = (128ull * 670091 + 670091) * sizeof(float);
  const std::uint64_t params = out_bytes + (135909ull * 128 + 128) * sizeof(float);

  const MemoryEstimate full =
      estimate_training_memory(amazon_shape(OutputLayer::kFull, OptimizerKind::kAdam, 0), one, o);
  EXPECT_EQ(full.model, 2 * params);      // the replica and the centre
  EXPECT_EQ(full.optimizer, 3 * params);  // a dense gradient and two Adam moments

  const MemoryEstimate adam = estimate_training_memory(
      amazon_shape(OutputLayer::kShortlist, OptimizerKind::kAdam, 0), one, o);
  const MemoryEstimate sgd = estimate_training_memory(
      amazon_shape(OutputLayer::kShortlist, OptimizerKind::kSgd, 0), one, o);
  // No output columns in the gradient buffer; plain SGD drops the output layer's moments.
  EXPECT_EQ(adam.optimizer, full.optimizer - out_bytes);
  EXPECT_EQ(sgd.optimizer, adam.optimizer - 2 * out_bytes);

  const ModelConfig indexed = amazon_shape(OutputLayer::kShortlist, OptimizerKind::kAdam, 10);
  const std::size_t index = cpu::label_index_bytes(indexed);
  // Two indexes and a coded snapshot: at least 2 x (links + codes) per label, well below the
  // float vectors' 670,091 x 129 x 4 bytes each.
  EXPECT_GT(index, 2ull * 670091 * (16 * 4 + 129));
  EXPECT_LT(index, 2ull * 670091 * 129 * 4);
  EXPECT_EQ(estimate_training_memory(indexed, one, o).optimizer, adam.optimizer + index);
  EXPECT_EQ(cpu::label_index_bytes(amazon_shape(OutputLayer::kFull, OptimizerKind::kAdam, 10)), 0u);
}

// Two CPU replicas hold two indexes' worth with a builder each (the library's default,
// wait_for_index), and less when they share one builder (the command line's default); the
// estimate counts them once for the set, not once per replica per replica.
TEST(MemoryEstimate, ReplicasCountTheirLabelIndexesOnce) {
  ModelConfig c = amazon_shape(OutputLayer::kShortlist, OptimizerKind::kAdam, 10);
  const std::vector<DeviceId> one{DeviceId::cpu(0)}, two{DeviceId::cpu(0), DeviceId::cpu(1)};
  TrainOptions o;
  o.keep_best = false;
  for (bool wait : {true, false}) {
    c.shortlist.wait_for_index = wait;
    const std::size_t index1 = cpu::label_index_bytes(c, 1), index2 = cpu::label_index_bytes(c, 2);
    const std::uint64_t state = estimate_training_memory(c, one, o).optimizer - index1;
    EXPECT_EQ(estimate_training_memory(c, two, o).optimizer, 2 * state + index2);
    if (wait) {
      EXPECT_EQ(index2, 2 * index1);
    } else {
      EXPECT_GT(index2, index1);
      EXPECT_LT(index2, 2 * index1);
    }
  }
  // A GPU replica keeps neither its state nor a label index in host RAM: its bytes are GPU
  // bytes, the CPU replica's state plus its scoring buffers.
  const MemoryEstimate cpu_only = estimate_training_memory(c, one, o);
  const MemoryEstimate mixed =
      estimate_training_memory(c, {DeviceId::cpu(0), DeviceId::cuda(0)}, o);
  EXPECT_EQ(mixed.optimizer, cpu_only.optimizer);
  EXPECT_EQ(cpu_only.gpu, 0u);
  const std::uint64_t params = ((135909ull * 128 + 128) + (128ull * 670091 + 670091)) * 4;
  EXPECT_EQ(mixed.gpu,
            params + (cpu_only.optimizer - cpu::label_index_bytes(c, 1)) + cpu_only.buffers);
  EXPECT_EQ(mixed.model, cpu_only.model);
}

TEST(MemoryEstimate, HostCopiesFollowTheOptions) {
  const ModelConfig c = amazon_shape(OutputLayer::kShortlist, OptimizerKind::kAdam, 0);
  const std::vector<DeviceId> one{DeviceId::cpu(0)};
  TrainOptions plain;
  plain.keep_best = false;
  TrainOptions more = plain;
  more.keep_best = true;
  more.mu = 0.5;
  const std::uint64_t params = ((135909ull * 128 + 128) + (128ull * 670091 + 670091)) * 4;
  EXPECT_EQ(estimate_training_memory(c, one, more).buffers -
                estimate_training_memory(c, one, plain).buffers,
            2 * params);  // the best model and Z_prev
  TrainOptions best_on_disk = more;
  best_on_disk.best_model_file = "model.best";
  EXPECT_EQ(estimate_training_memory(c, one, more).buffers -
                estimate_training_memory(c, one, best_on_disk).buffers,
            params);
}

// Without a run (evaluation, prediction) only the replicas and their scoring buffers count.
TEST(MemoryEstimate, ReplicasWithoutARunHoldNoCentre) {
  const ModelConfig c = amazon_shape(OutputLayer::kFull, OptimizerKind::kAdam, 0);
  const std::uint64_t params = ((135909ull * 128 + 128) + (128ull * 670091 + 670091)) * 4;
  TrainOptions o;
  o.keep_best = false;
  const MemoryEstimate bare = estimate_replica_bytes(c, {DeviceId::cpu(0)});
  EXPECT_EQ(bare.model, params);
  EXPECT_EQ(estimate_training_memory(c, {DeviceId::cpu(0)}, o).model, 2 * params);
  EXPECT_EQ(estimate_replica_bytes(c, {DeviceId::cuda(0)}).host(), 0u);
}

// make_replicas refuses a set that cannot fit before it allocates anything.
TEST(ReplicaFactory, RefusesWhatCannotFit) {
  const ModelConfig c = amazon_shape(OutputLayer::kFull, OptimizerKind::kAdam, 0);
  ::setenv("HETSGD_MEMORY_LIMIT", "64M", 1);
  EXPECT_THROW(make_replicas({DeviceId::cpu(0)}, c, DeviceOptions{1}), MemoryBudgetExceeded);
  ::unsetenv("HETSGD_MEMORY_LIMIT");
}

TEST(ReplicaFactory, ParsesInjectedFaults) {
  const InjectedFault f = parse_injected_fault("1:after=3,seed=2", 2);
  EXPECT_EQ(f.device, 1u);
  EXPECT_EQ(f.spec.fail_after_steps, 3);
  EXPECT_THROW(parse_injected_fault("2:after=3", 2), InvalidArgument);
  EXPECT_THROW(parse_injected_fault("after=3", 2), InvalidArgument);
}

}  // namespace
}  // namespace hetsgd
