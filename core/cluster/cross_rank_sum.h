/// \file core/cluster/cross_rank_sum.h
/// The cross-rank step of ClusterCommunicator (core/cluster/cluster_communicator.h), as a
/// strategy (the interface, CrossRankSum and CrossRankOffer, is core/cross_rank_offer.h): the
/// default sends host buffers through the Cluster (MPI); a backend may offer one that sums on
/// its devices (kernels/cuda: NCCL between the ranks' GPUs), through
/// Communicator::cross_rank_offer(). Core never names the backend: the seam is that virtual
/// call, answered by kernels/.
///
/// Threads: every call is collective over the Cluster (every rank, same order, from the
/// scheduler thread while the devices are idle).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cross_rank_offer.h"
#include "core/device.h"
#include "core/types.h"

namespace hetsgd {

/// The default: host buffers through cluster.allreduce_sum (float). Non-owning: `cluster`
/// outlives the result. Not collective.
std::unique_ptr<CrossRankSum> make_host_cross_rank_sum(Cluster& cluster);

/// The strategy every rank uses, the same on all: the offered device strategy (made
/// collectively) when every rank offers one and no two ranks name the same key, else the host
/// strategy on every rank (ranks on different transports would wait for each other for ever).
/// Collective: one allgather of the keys, then `offer.make` on every rank or on none.
std::unique_ptr<CrossRankSum> choose_cross_rank_sum(Cluster& cluster, const CrossRankOffer& offer);

}  // namespace hetsgd
