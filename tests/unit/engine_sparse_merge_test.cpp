// Sparse merges and all-reduces (only the rows touched since the last merge move) against the
// dense ones: same centre, history, replicas and gradients, bit for bit, on CPU devices with
// full and shortlisted output layers.
#include <gtest/gtest.h>

#include <cmath>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cluster_communicator.h"
#include "core/communicator.h"
#include "core/engine/centre.h"
#include "core/engine/trainer.h"
#include "core/forwarding_device.h"
#include "core/math/centre_update.h"
#include "core/param_rows.h"
#include "core/random.h"
#include "core/row_exchange.h"
#include "datasets/synthetic.h"
#include "kernels/registry.h"
#include "tests/common/small_models.h"
#include "tests/unit/engine_test_support.h"
#include "tests/unit/mirrored_cluster.h"

namespace hetsgd {
namespace {

// The CPU row exchange without its host-memory door: sparse merges then stage the rows through
// read_rows()/write_rows(), as for a device whose memory is not the host's.
class StagedRows final : public RowExchange {
 public:
  explicit StagedRows(RowExchange& inner) : inner_(inner) {}
  ParamRows touched_since_sync() const override { return inner_.touched_since_sync(); }
  void clear_touched() override { inner_.clear_touched(); }
  ParamRows gradient_rows() const override { return inner_.gradient_rows(); }
  void read_rows(const ParamRows& r, float* dst) override { inner_.read_rows(r, dst); }
  void write_rows(const ParamRows& r, const float* src) override { inner_.write_rows(r, src); }
  void read_gradient_rows(const ParamRows& r, float* dst) override {
    inner_.read_gradient_rows(r, dst);
  }
  void write_gradient_rows(const ParamRows& r, const float* src) override {
    inner_.write_gradient_rows(r, src);
  }
  float* host_params() override { return nullptr; }
  void host_params_written() override {}

 private:
  RowExchange& inner_;
};

// Forwards a CPU device. Without `rows` it has no row exchange, so the engine sees a device
// that cannot list its rows and takes the dense path: the reference every sparse result is
// compared with. With `rows` its row exchange is StagedRows.
class Forwarding final : public ForwardingDevice {
 public:
  Forwarding(std::unique_ptr<Device> inner, bool rows)
      : ForwardingDevice(std::move(inner)),
        staged_(*ForwardingDevice::row_exchange()),
        rows_(rows) {}
  std::string name() const override { return inner().name() + (rows_ ? " (staged)" : " (dense)"); }
  RowExchange* row_exchange() override { return rows_ ? &staged_ : nullptr; }

 private:
  StagedRows staged_;
  bool rows_;
};

struct Variant {
  std::string name;
  double alpha, beta, mu;
  bool shortlist;
  OptimizerKind optimizer;
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

ModelConfig small_model(bool shortlist, OptimizerKind optimizer) {
  ModelConfig c = test::fixed_model();
  c.num_features = 400;
  c.num_labels = 300;
  c.hidden = {24};
  c.optimizer.kind = optimizer;
  if (optimizer == OptimizerKind::kSgd) c.optimizer.momentum = 0.9f;
  c.optimizer.weight_decay = 1e-3f;
  c.seed = 17;
  if (shortlist) {
    c.output_layer = OutputLayer::kShortlist;
    c.shortlist.hard_negatives = 4;
    c.shortlist.sampled_negatives = 16;
    c.shortlist.rebuild_steps = 2;  // hard negatives from the index after a few steps
    c.shortlist.optimizer = optimizer;
  }
  return c;
}

// Small batches touch a small part of the 400 features and 300 labels.
CsrBatch batch(const ModelConfig& c, std::uint64_t seed) {
  return datasets::power_law_batch(6, c.num_labels, seed, c.num_features, 8.0);
}

std::vector<float> params_of(Device& d) {
  std::vector<float> p(static_cast<std::size_t>(d.layout().total()));
  d.read_params(p.data());
  return p;
}

std::vector<float> gradient_of(Device& d) {
  std::vector<float> g(static_cast<std::size_t>(d.layout().total()));
  d.read_gradient(g.data());
  return g;
}

struct Replicas {
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> raw;
};

// How a merge reaches the replicas: sparse in their host memory (CPU devices as they are),
// sparse through staged row copies, or dense.
enum class Path { kInPlace, kStaged, kDense };

Replicas make_replicas(const ModelConfig& c, int k, Path path) {
  Replicas r;
  DeviceOptions o;
  o.threads = 1;
  for (int i = 0; i < k; ++i) {
    auto d = make_device(DeviceId::cpu(i), c, o);
    if (path != Path::kInPlace)
      d = std::make_unique<Forwarding>(std::move(d), path == Path::kStaged);
    r.owned.push_back(std::move(d));
    r.raw.push_back(r.owned.back().get());
  }
  return r;
}

Replicas make_replicas(const ModelConfig& c, int k, bool dense) {
  return make_replicas(c, k, dense ? Path::kDense : Path::kInPlace);
}

class SparseMerge : public ::testing::TestWithParam<Variant> {};

// Restarts with alpha = 1 and mu = 0 merge in the CPU replicas' memory; the staged copies
// of the same sparse merge and the dense merge must give the same bits.
TEST_P(SparseMerge, EqualsTheDenseMergeBitForBit) {
  const Variant v = GetParam();
  const ModelConfig c = small_model(v.shortlist, v.optimizer);
  std::vector<Replicas> sets;
  for (Path p : {Path::kInPlace, Path::kStaged, Path::kDense})
    sets.push_back(make_replicas(c, 3, p));
  const std::vector<std::string> names = {"in place", "staged", "dense"};
  auto comm = make_host_communicator();
  const index_t n = sets[0].raw[0]->layout().total();
  std::vector<std::unique_ptr<Centre>> owned;
  for (std::size_t s = 0; s < sets.size(); ++s) owned.push_back(std::make_unique<Centre>(n, *comm));
  auto centres = [&](std::size_t s) -> Centre& { return *owned[s]; };
  for (std::size_t s = 0; s < sets.size(); ++s) {
    centres(s).start_from(*sets[s].raw[0]);
    centres(s).start_replicas(sets[s].raw);
  }
  // The merge on host copies in the engine's arithmetic (the dense path's definition).
  std::vector<float> z = centres(0).z(), z_prev = z;
  const std::vector<double> w = {0.5, 0.3, 0.2};
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int i = 0; i < 3; ++i) {
      for (int s = 0; s < 2; ++s) {
        const CsrBatch b = batch(c, 1000 + 10 * round + 3 * i + s);
        for (Replicas& r : sets) r.raw[i]->train_step(b, 0.05f);
      }
    }
    std::vector<std::vector<float>> before;
    for (Device* d : sets[2].raw) before.push_back(params_of(*d));
    for (std::size_t k = 0; k < z.size(); ++k) {
      double a = 0.0;
      for (int i = 0; i < 3; ++i) a += w[i] * static_cast<double>(before[i][k]);
      math::centre_update(z[k], z_prev[k], static_cast<float>(a), v.alpha, v.mu);
    }
    for (std::size_t s = 0; s < sets.size(); ++s) {
      SCOPED_TRACE(names[s]);
      centres(s).merge(sets[s].raw, w, v.alpha, v.beta, v.mu);
      if (s == 2) {
        EXPECT_EQ(centres(s).last_merge_floats(), n);
      } else {
        EXPECT_LT(centres(s).last_merge_floats(), n);
      }
      ASSERT_EQ(centres(s).z(), z);
      if (v.mu != 0.0) {
        ASSERT_EQ(centres(s).history(), z_prev);
      }
      for (int i = 0; i < 3; ++i) {
        std::vector<float> want = z;
        if (v.beta < 1.0) {
          for (std::size_t k = 0; k < want.size(); ++k) {
            want[k] = math::pull_towards(before[i][k], z[k], v.beta);
          }
        }
        ASSERT_EQ(params_of(*sets[s].raw[i]), want) << "replica " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, SparseMerge,
    ::testing::Values(Variant{"average", 1.0, 1.0, 0.0, false, OptimizerKind::kAdam},
                      Variant{"average_shortlist", 1.0, 1.0, 0.0, true, OptimizerKind::kAdam},
                      Variant{"elastic_shortlist_sgd", 0.7, 1.0, 0.0, true, OptimizerKind::kSgd},
                      Variant{"momentum", 1.0, 1.0, 0.5, false, OptimizerKind::kSgd},
                      Variant{"momentum_shortlist", 0.8, 1.0, 0.6, true, OptimizerKind::kAdam},
                      Variant{"pull", 1.0, 0.5, 0.0, false, OptimizerKind::kAdam},
                      Variant{"pull_momentum_shortlist", 0.8, 0.4, 0.3, true, OptimizerKind::kSgd}),
    [](const ::testing::TestParamInfo<Variant>& i) { return i.param.name; });

// After a plain broadcast (a resume may write replicas of its own) nothing is known: the
// first merge moves every row, the next only what changed.
TEST(SparseMergeStart, AfterAPlainBroadcastTheFirstMergeMovesEveryRow) {
  const ModelConfig c = small_model(true, OptimizerKind::kAdam);
  Replicas r = make_replicas(c, 2, false);
  auto comm = make_host_communicator();
  const index_t n = r.raw[0]->layout().total();
  Centre centre(n, *comm);
  centre.start_from(*r.raw[0]);
  centre.broadcast(r.raw);
  // A replica written from outside, as a resume of a pulled run does.
  std::vector<float> other = params_of(*r.raw[1]);
  for (float& x : other) x *= 0.5f;
  r.raw[1]->write_params(other.data());
  const std::vector<double> w = {0.5, 0.5};
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 2; ++i) r.raw[i]->train_step(batch(c, 3000 + 2 * round + i), 0.05f);
    const std::vector<float> a = params_of(*r.raw[0]), b = params_of(*r.raw[1]);
    centre.merge(r.raw, w, 1.0, 1.0, 0.0);
    EXPECT_EQ(centre.last_merge_floats() == n, round == 0) << "round " << round;
    for (std::size_t k = 0; k < a.size(); ++k) {
      ASSERT_EQ(centre.z()[k], static_cast<float>(0.5 * a[k] + 0.5 * b[k])) << k;
    }
  }
}

// One replica (one device, weight 1, plain averaging): Z follows it exactly, and nothing is
// written back to the replica.
TEST(SparseMergeStart, WithOneReplicaTheCentreIsTheReplica) {
  const ModelConfig c = small_model(true, OptimizerKind::kAdam);
  Replicas r = make_replicas(c, 1, false);
  auto comm = make_host_communicator();
  const index_t n = r.raw[0]->layout().total();
  Centre centre(n, *comm);
  centre.start_from(*r.raw[0]);
  centre.start_replicas(r.raw);
  for (int round = 0; round < 3; ++round) {
    r.raw[0]->train_step(batch(c, 4000 + round), 0.05f);
    const std::vector<float> before = params_of(*r.raw[0]);
    centre.merge(r.raw, {1.0}, 1.0, 1.0, 0.0);
    EXPECT_LT(centre.last_merge_floats(), n);
    ASSERT_EQ(centre.z(), before);
    ASSERT_EQ(params_of(*r.raw[0]), before);
  }
}

class SparseAllreduce : public ::testing::TestWithParam<Variant> {};

TEST_P(SparseAllreduce, EqualsTheDenseAllreduceBitForBit) {
  const Variant v = GetParam();
  const ModelConfig c = small_model(v.shortlist, v.optimizer);
  Replicas sparse = make_replicas(c, 3, false), dense = make_replicas(c, 3, true);
  auto comm = make_host_communicator();
  const std::vector<double> ones(3, 1.0);
  for (int step = 0; step < 6; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    for (int i = 0; i < 3; ++i) {
      const CsrBatch b = batch(c, 2000 + 10 * step + i);
      sparse.raw[i]->gradient(b, 1.0f / 3.0f);
      dense.raw[i]->gradient(b, 1.0f / 3.0f);
    }
    comm->allreduce_gradients(sparse.raw, ones);
    comm->allreduce_gradients(dense.raw, ones);
    // The sparse all-reduce kept the devices' row lists (the dense one cannot).
    const ParamRows rows = sparse.raw[0]->row_exchange()->gradient_rows();
    ASSERT_FALSE(rows.everything);
    // (A full output layer is dense: 7,500 of the 17,124 parameters.)
    EXPECT_LT(packed_fraction(sparse.raw[0]->layout(), rows), v.shortlist ? 0.5 : 0.7);
    const std::vector<float> g = gradient_of(*dense.raw[0]);
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(gradient_of(*dense.raw[i]), g);
      ASSERT_EQ(gradient_of(*sparse.raw[i]), g);
    }
    for (int i = 0; i < 3; ++i) {
      sparse.raw[i]->apply_update(0.05f);
      dense.raw[i]->apply_update(0.05f);
    }
    const std::vector<float> p = params_of(*dense.raw[0]);
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(params_of(*dense.raw[i]), p);
      ASSERT_EQ(params_of(*sparse.raw[i]), p);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, SparseAllreduce,
    ::testing::Values(Variant{"full_adam", 1, 1, 0, false, OptimizerKind::kAdam},
                      Variant{"full_momentum", 1, 1, 0, false, OptimizerKind::kSgd},
                      Variant{"shortlist_adam", 1, 1, 0, true, OptimizerKind::kAdam},
                      Variant{"shortlist_momentum", 1, 1, 0, true, OptimizerKind::kSgd}),
    [](const ::testing::TestParamInfo<Variant>& i) { return i.param.name; });

// Whole runs: the engine with sparse exchanges ends where the dense engine ends.
TEST(SparseExchange, TrainingRunsMatchTheDenseEngine) {
  test::EngineProblem p = test::small_problem(768, 64);
  p.config = small_model(true, OptimizerKind::kAdam);
  p.config.num_features = 256;
  p.config.num_labels = 32;
  for (Algo algo : {Algo::kAdaptive, Algo::kSync}) {
    SCOPED_TRACE(algo == Algo::kAdaptive ? "adaptive" : "sync");
    TrainOptions o;
    o.algo = algo;
    o.deterministic = true;
    o.batch_policy = BatchPolicy::kFixed;  // no batch size from measured timings
    o.b0 = 32;
    o.round_samples = 256;
    o.max_rounds = 4;
    o.max_epochs = 0.0;
    o.eval_at_start = false;
    o.mu = algo == Algo::kAdaptive ? 0.3 : 0.0;
    std::vector<float> got[2];
    for (int dense = 0; dense < 2; ++dense) {
      Replicas r = make_replicas(p.config, 2, dense == 1);
      auto comm = make_host_communicator();
      got[dense] = train(r.raw, *comm, p.train, p.test, o).centre;
    }
    EXPECT_EQ(got[0], got[1]);
  }
}

// Each rank knows only the rows its own devices touched, so across ranks a row merge would
// miss the others' rows: the merge must sum the whole model over ranks. With a mirrored
// second rank and node weights that sum to one half, it equals the one-node merge exactly.
TEST(SparseMergeAcrossRanks, TheMergeSumsTheWholeModelOverRanks) {
  const ModelConfig c = small_model(true, OptimizerKind::kAdam);
  Replicas local = make_replicas(c, 2, false), ranked = make_replicas(c, 2, false);
  auto host = make_host_communicator();
  test::MirroredTwoRanks cluster;
  ClusterCommunicator across(*host, cluster);
  EXPECT_FALSE(across.merges_rows());
  const index_t n = local.raw[0]->layout().total();
  Centre cl(n, *host), cr(n, across);
  cl.start_from(*local.raw[0]);
  cr.start_from(*ranked.raw[0]);
  cl.start_replicas(local.raw);
  cr.start_replicas(ranked.raw);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 2; ++i) {
      const CsrBatch b = batch(c, 500 + 10 * round + i);
      local.raw[i]->train_step(b, 0.05f);
      ranked.raw[i]->train_step(b, 0.05f);
    }
    cl.merge(local.raw, {0.6, 0.4}, 1.0, 1.0, 0.0);
    cr.merge(ranked.raw, {0.3, 0.2}, 1.0, 1.0, 0.0);
    ASSERT_FALSE(cluster.float_sums.empty());
    EXPECT_EQ(cluster.float_sums.back(), n) << "round " << round;
    EXPECT_EQ(cl.z(), cr.z()) << "round " << round;
  }
  EXPECT_EQ(params_of(*local.raw[1]), params_of(*ranked.raw[1]));
}

TEST(ParamRows, PackedPiecesCoverTheRows) {
  const ModelConfig c = small_model(true, OptimizerKind::kAdam);
  const ParamLayout layout(c);
  std::vector<float> full(static_cast<std::size_t>(layout.total()));
  for (std::size_t k = 0; k < full.size(); ++k) full[k] = static_cast<float>(k);
  ParamRows rows = ParamRows::none(true);
  rows.dense = true;
  rows.input = {3, 7, 399};
  rows.output = {0, 5, 6, 299};
  const index_t h0 = layout.layers()[0].out, h = layout.layers().back().in;
  ASSERT_EQ(packed_size(layout, rows),
            3 * h0 + (layout.layers().back().w_offset - layout.layers()[0].b_offset) + 4 * (h + 1));
  std::vector<float> packed(static_cast<std::size_t>(packed_size(layout, rows)));
  pack_rows(layout, rows, full.data(), packed.data());
  // W0 row 7 comes second; label 5's bias is in the last packed row.
  EXPECT_EQ(packed[static_cast<std::size_t>(h0)], full[static_cast<std::size_t>(7 * h0)]);
  EXPECT_EQ(packed[packed.size() - 3],
            full[static_cast<std::size_t>(layout.layers().back().b_offset + 5)]);
  // The output labels' rows are packed whole: label 6's weights follow label 5's.
  const LayerSlice& out = layout.layers().back();
  const std::size_t out_start = packed.size() - 4 * static_cast<std::size_t>(h + 1);
  for (index_t i = 0; i < h; ++i) {
    EXPECT_EQ(packed[out_start + static_cast<std::size_t>(2 * h + i)],
              full[static_cast<std::size_t>(out.w_offset + 6 * h + i)]);
  }
  // Piece by piece gives the same values, and scattering them back restores the buffer.
  std::vector<float> copy(full.size(), -1.0f);
  std::size_t pieces = 0;
  for (const ParamRows& piece : split_rows(layout, rows, 50)) {
    std::vector<float> part(static_cast<std::size_t>(packed_size(layout, piece)));
    ASSERT_LE(part.size(), 50u + static_cast<std::size_t>(h + 1));
    pack_rows(layout, piece, full.data(), part.data());
    unpack_rows(layout, piece, part.data(), copy.data());
    ++pieces;
  }
  EXPECT_GT(pieces, 3u);
  std::vector<float> again(packed.size());
  pack_rows(layout, rows, copy.data(), again.data());
  EXPECT_EQ(again, packed);
  // Parameters outside the rows were not written.
  EXPECT_EQ(copy[0], -1.0f);
  const ParamRows u = unite(rows, ParamRows::every_row(layout, true));
  EXPECT_EQ(packed_size(layout, u), layout.total());
}

// The output layer alone is stored by label ([L x in]); its element (i, j) starts with the
// draw of counter w_offset + i * L + j, as an [in x L] layer's would, so the initial model is
// the same whichever way it is stored (and the PyTorch baseline's copy of it still holds).
TEST(ParamLayout, OutputLayerIsStoredByLabelAndDrawnAsIfByInput) {
  const ModelConfig c = small_model(true, OptimizerKind::kSgd);
  const ParamLayout layout(c);
  std::vector<float> p(static_cast<std::size_t>(layout.total()));
  init_params(layout, c.seed, p.data());
  const std::vector<LayerSlice>& ls = layout.layers();
  for (std::size_t l = 0; l < ls.size(); ++l) {
    EXPECT_EQ(ls[l].by_output, l + 1 == ls.size()) << "layer " << l;
  }
  auto draw = [&](const LayerSlice& s, index_t k) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(s.in));
    return bound * (2.0f * uniform01(c.seed, static_cast<std::uint64_t>(k)) - 1.0f);
  };
  const LayerSlice& in = ls.front();
  const LayerSlice& out = ls.back();
  EXPECT_EQ(p[static_cast<std::size_t>(in.w_offset + 7 * in.out + 2)],
            draw(in, in.w_offset + 7 * in.out + 2));
  for (index_t j : {0, 5, 299}) {
    for (index_t i : {index_t{0}, out.in - 1}) {
      EXPECT_EQ(p[static_cast<std::size_t>(out.w_offset + j * out.in + i)],
                draw(out, out.w_offset + i * out.out + j))
          << "label " << j << " input " << i;
    }
  }
  EXPECT_EQ(p[static_cast<std::size_t>(out.b_offset + 5)], draw(out, out.b_offset + 5));
}

}  // namespace
}  // namespace hetsgd
