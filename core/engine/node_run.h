/// \file core/engine/node_run.h
/// What the run loop does differently when it is one node of several (core/cluster/README.md): the
/// checks at the start, the communicator, the stopping rules, and the summaries at the end. Rounds
/// reach the other nodes through NodeGroup; this file holds the run loop's side.
#pragma once

#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/dataset.h"
#include "core/engine/node_group.h"
#include "core/engine/selection.h"
#include "core/engine/train_options.h"
#include "core/engine/train_result.h"
#include "core/engine/train_state.h"
#include "core/model_config.h"

namespace hetsgd {

/// Throws InvalidArgument on every rank when the run cannot go across `nodes`: EASGD and
/// --deterministic run within one node; every rank must train the same model on the same data
/// with the same trajectory, checkpoint and epoch options (a rank started with other options,
/// e.g. by an MPMD mpirun line, is named). Collective. Nothing to check for one node.
void check_node_run(NodeGroup& nodes, const TrainOptions& options, const Dataset& train,
                    const ModelConfig& config, index_t param_count);

/// The communicator the rounds use: `node` itself on one node, else a ClusterCommunicator
/// over it (returned; the caller keeps it alive). Null on one node.
std::unique_ptr<Communicator> make_node_communicator(NodeGroup& nodes, Communicator& node);

/// Whether `algo`'s rounds draw from the global cursor across nodes (adaptive, avg); sync keeps
/// one identical cursor per node and splits each global batch.
bool draws_global_cursor(Algo algo);

/// The stopping rule that holds between rounds, first match in the order interrupted, target,
/// patience, rounds, epochs, time; false when none does. `consumed` is T.
bool stop_rule(const TrainOptions& options, const TrainState& state, const ModelSelector& selector,
               bool interrupted, index_t consumed, index_t epoch_limit, StopReason* why);

/// Every rank's device summaries, in rank order, on every rank (DeviceSummary::rank set).
/// Collective. One node: `local` with rank 0.
std::vector<DeviceSummary> gather_summaries(NodeGroup& nodes, std::vector<DeviceSummary> local);

}  // namespace hetsgd
