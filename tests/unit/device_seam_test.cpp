// The device seam (core/device.h, core/forwarding_device.h): a decorated replica (speed
// emulation, fault injection) offers the same row exchange as the bare one, so the engine's
// merges and all-reduces take the same sparse, in-place path and give the same bits.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/emulated_device.h"
#include "core/engine/centre.h"
#include "core/error.h"
#include "core/faulty_device.h"
#include "core/row_exchange.h"
#include "datasets/synthetic.h"
#include "kernels/cpu/cpu_device.h"
#include "kernels/registry.h"
#include "tests/common/small_models.h"

namespace hetsgd {
namespace {

ModelConfig shortlisted_model() {
  ModelConfig c = test::mlp(400, 300, {24});
  c.optimizer.kind = OptimizerKind::kAdam;
  c.seed = 11;
  c.output_layer = OutputLayer::kShortlist;
  c.shortlist.hard_negatives = 0;
  c.shortlist.sampled_negatives = 16;
  return c;
}

enum class Wrap { kBare, kEmulated, kFaulty };

std::vector<std::unique_ptr<Device>> replicas(const ModelConfig& c, Wrap wrap) {
  std::vector<std::unique_ptr<Device>> out;
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<Device> d = make_device(DeviceId::cpu(i), c, DeviceOptions{1});
    if (wrap == Wrap::kEmulated) d = make_emulated_device(std::move(d), 0.9);
    if (wrap == Wrap::kFaulty) d = make_faulty_device(std::move(d), FaultSpec{});
    out.push_back(std::move(d));
  }
  return out;
}

using test::params_of;

TEST(DeviceSeam, DecoratorsForwardTheRowExchangeAndTheBackend) {
  const ModelConfig c = shortlisted_model();
  for (Wrap wrap : {Wrap::kEmulated, Wrap::kFaulty}) {
    auto devs = replicas(c, wrap);
    RowExchange* rx = devs[0]->row_exchange();
    ASSERT_NE(rx, nullptr);
    EXPECT_NE(rx->host_params(), nullptr);  // the in-place merge stays available
    EXPECT_NE(dynamic_cast<cpu::CpuDevice*>(&devs[0]->backend()), nullptr);
  }
}

// Three sets of two replicas (bare, emulated, fault-injected without a fault) train the same
// batches; merges move the same rows (fewer than the model) and give the same centre and
// replicas bit for bit, and so does the sparse all-reduce of their gradients.
TEST(DeviceSeam, DecoratedReplicasTakeTheBareSparsePath) {
  const ModelConfig c = shortlisted_model();
  std::vector<std::vector<std::unique_ptr<Device>>> sets;
  for (Wrap wrap : {Wrap::kBare, Wrap::kEmulated, Wrap::kFaulty}) sets.push_back(replicas(c, wrap));
  auto comm = make_host_communicator();
  const index_t n = sets[0][0]->layout().total();
  std::vector<std::unique_ptr<Centre>> centres;
  std::vector<std::vector<Device*>> raw(sets.size());
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (auto& d : sets[s]) raw[s].push_back(d.get());
    centres.push_back(std::make_unique<Centre>(n, *comm));
    centres[s]->start_from(*raw[s][0]);
    centres[s]->start_replicas(raw[s]);
  }
  const std::vector<double> w = {0.6, 0.4};
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int i = 0; i < 2; ++i) {
      const CsrBatch b =
          datasets::power_law_batch(6, c.num_labels, 100 + 2 * round + i, c.num_features, 8.0);
      for (auto& r : raw) r[static_cast<std::size_t>(i)]->train_step(b, 0.05f);
    }
    for (std::size_t s = 0; s < sets.size(); ++s) {
      centres[s]->merge(raw[s], w, 1.0, 1.0, 0.0);
      EXPECT_LT(centres[s]->last_merge_floats(), n);
      EXPECT_EQ(centres[s]->last_merge_floats(), centres[0]->last_merge_floats());
      ASSERT_EQ(centres[s]->z(), centres[0]->z()) << "set " << s;
      for (int i = 0; i < 2; ++i) ASSERT_EQ(params_of(*raw[s][i]), params_of(*raw[0][i]));
    }
  }
  // Gradients: the same rows are listed and the all-reduce leaves the same sums.
  const CsrBatch b = datasets::power_law_batch(6, c.num_labels, 900, c.num_features, 8.0);
  std::vector<std::vector<float>> grads;
  for (auto& r : raw) {
    for (Device* d : r) d->gradient(b, 1.0f);
    const ParamRows rows = r[0]->row_exchange()->gradient_rows();
    EXPECT_FALSE(rows.everything);
    comm->allreduce_gradients(r, w);
    std::vector<float> g(static_cast<std::size_t>(n));
    r[1]->read_gradient(g.data());
    grads.push_back(std::move(g));
  }
  EXPECT_EQ(grads[1], grads[0]);
  EXPECT_EQ(grads[2], grads[0]);
}

// A failed replica refuses row transfers like every other transfer.
TEST(DeviceSeam, AFailedReplicaRefusesRowTransfers) {
  const ModelConfig c = shortlisted_model();
  FaultSpec spec;
  spec.fail_after_steps = 0;
  auto d = make_faulty_device(make_device(DeviceId::cpu(0), c, DeviceOptions{1}), spec);
  const CsrBatch b = datasets::power_law_batch(4, c.num_labels, 5, c.num_features, 8.0);
  EXPECT_THROW(d->train_step(b, 0.1f), DeviceUnavailable);
  RowExchange* rx = d->row_exchange();
  ASSERT_NE(rx, nullptr);
  std::vector<float> out(static_cast<std::size_t>(d->layout().total()));
  EXPECT_THROW(rx->read_rows(ParamRows::all(), out.data()), DeviceUnavailable);
  EXPECT_THROW(rx->host_params(), DeviceUnavailable);
}

}  // namespace
}  // namespace hetsgd
