/// \file tests/common/plain_training.h
/// A plain training loop on one device, without the engine: the accuracy tests' reference
/// recipe (a full-softmax MLP, shuffled epochs, fixed learning rate, one top-5 pass at the end).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/dataset.h"
#include "core/device.h"
#include "core/metrics.h"
#include "core/model_config.h"
#include "core/random.h"
#include "tests/common/small_models.h"

namespace hetsgd::test {

/// A full-softmax MLP shaped for `train` with one hidden layer of 128, trained with Adam;
/// seed 1.
inline ModelConfig softmax_mlp_for(const Dataset& train) {
  ModelConfig c = test::fixed_model();
  c.num_features = train.num_features;
  c.num_labels = train.num_labels;
  c.hidden = {128};
  c.loss = Loss::kSoftmax;
  c.optimizer.kind = OptimizerKind::kAdam;
  c.seed = 1;
  return c;
}

/// `epochs` epochs of `train_step` on `dev` at the fixed rate `lr`, in batches of `batch` rows
/// of a fresh permutation of `train` each epoch (drawn from `seed`).
inline void train_epochs(Device& dev, const Dataset& train, int epochs, index_t batch, float lr,
                         std::uint64_t seed) {
  std::vector<index_t> perm(static_cast<std::size_t>(train.rows()));
  std::iota(perm.begin(), perm.end(), 0);
  SplitMix64 rng(seed);
  CsrBatch b;
  for (int e = 0; e < epochs; ++e) {
    std::shuffle(perm.begin(), perm.end(), rng);
    for (index_t s = 0; s < train.rows(); s += batch) {
      gather_rows(train, perm.data() + s, std::min(batch, train.rows() - s), &b);
      dev.train_step(b, lr);
    }
  }
}

/// Ranking metrics at 1..5 (and the loss) of `dev` on the whole of `test`, in one pass.
inline RankingMetrics top5_metrics(Device& dev, const Dataset& test) {
  const int k = 5;
  std::vector<col_t> top(static_cast<std::size_t>(test.rows() * k));
  std::vector<float> scores(top.size());
  RankingMetrics m;
  m.loss = dev.predict_topk(test, k, top.data(), scores.data());
  accumulate_ranking(test, top.data(), k, &m);
  finish_ranking(&m);
  return m;
}

}  // namespace hetsgd::test
