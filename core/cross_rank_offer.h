/// \file core/cross_rank_offer.h
/// The cross-rank step of a run across processes, as the node's Communicator offers it: after
/// the node communicator has reduced this rank's devices, a CrossRankSum adds the ranks'
/// results. A backend may offer one that sums on its devices (kernels/cuda: NCCL between the
/// ranks' GPUs) through Communicator::cross_rank_offer(); the cluster layer
/// (core/cluster/cross_rank_sum.h) chooses it or its host default. These types live here, not
/// in core/cluster/, so that core/communicator.h does not include the cluster layer that is
/// built on it.
///
/// Threads: every call is collective over the Cluster (every rank, same order, from the
/// scheduler thread while the devices are idle).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/types.h"

namespace hetsgd {

class Cluster;

/// Sums one buffer per rank over the ranks of a Cluster.
class CrossRankSum {
 public:
  virtual ~CrossRankSum() = default;

  /// "mpi" (host transport) or "nccl" (reports, tests).
  virtual const char* name() const = 0;

  /// In place on every rank: data[k] = sum over ranks of data[k] (`n` floats, host memory).
  virtual void sum_host(float* data, index_t n) = 0;

  /// Each rank's devices hold that rank's node-summed gradient (the node communicator's
  /// all-reduce ran first, so devices[0] speaks for the rank). Afterwards every device of every
  /// rank holds the sum over ranks. `devices` is non-empty; all share one layout.
  virtual void sum_gradients(const std::vector<Device*>& devices) = 0;
};

/// Makes a backend's CrossRankSum for `cluster`. Collective over `cluster` (it may set up a
/// communicator between the ranks, e.g. NCCL's bootstrap); called on every rank or none. Returns
/// non-null or throws.
using CrossRankSumMaker = std::function<std::unique_ptr<CrossRankSum>(Cluster& cluster)>;

/// What a rank's backend offers for the cross-rank step (Communicator::cross_rank_offer).
struct CrossRankOffer {
  /// The hardware this rank would sum on, unique across a job's machines (a GPU's UUID). Two
  /// ranks naming the same key would share it, which NCCL refuses. Empty: no offer.
  std::string key;
  /// Makes the strategy; empty: no offer.
  CrossRankSumMaker make;
  /// Whether this rank offers a device strategy.
  bool offered() const { return !key.empty() && static_cast<bool>(make); }
};

}  // namespace hetsgd
