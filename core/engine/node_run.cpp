#include "core/engine/node_run.h"

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "core/cluster/cluster_communicator.h"
#include "core/engine/summary_json.h"
#include "core/error.h"

namespace hetsgd {

void check_node_run(NodeGroup& nodes, const TrainOptions& o, const Dataset& train,
                    const ModelConfig& config, index_t param_count) {
  if (!nodes.multi()) return;
  HETSGD_CHECK(o.algo != Algo::kEasgd,
               "--algo=easgd runs within one node; across nodes use adaptive, sync or avg");
  HETSGD_CHECK(!o.deterministic,
               "--deterministic plans a round on one node; across nodes batches go to whichever "
               "node is free (run without --deterministic)");
  // What every rank must agree on, or the merges would add unrelated models: the trajectory,
  // the model and data shapes, and the options that make ranks take part in a collective.
  std::ostringstream os;
  os << o.trajectory_text() << " rows=" << train.rows() << " features=" << config.num_features
     << " labels=" << config.num_labels << " params=" << param_count
     << " checkpoint=" << (o.checkpoint_path.empty() ? 0 : 1)
     << " checkpoint_every=" << o.checkpoint_every_rounds << " epochs=" << o.max_epochs
     << " resume=" << (o.resume_path.empty() ? 0 : 1);
  const std::vector<std::string> all = nodes.cluster().allgather(os.str());
  for (std::size_t r = 1; r < all.size(); ++r) {
    HETSGD_CHECK(all[r] == all[0], "rank " << r << " was started with other options or data than "
                                           << "rank 0 (only --devices may differ per rank)\n"
                                           << "  rank 0: " << all[0] << "\n  rank " << r << ": "
                                           << all[r]);
  }
}

std::unique_ptr<Communicator> make_node_communicator(NodeGroup& nodes, Communicator& node) {
  if (!nodes.multi()) return nullptr;
  return std::make_unique<ClusterCommunicator>(node, nodes.cluster());
}

bool draws_global_cursor(Algo algo) { return algo == Algo::kAdaptive || algo == Algo::kAvg; }

bool stop_rule(const TrainOptions& o, const TrainState& st, const ModelSelector& selector,
               bool interrupted, index_t consumed, index_t epoch_limit, StopReason* why) {
  if (interrupted) {
    *why = StopReason::kInterrupted;
  } else if (st.target_reached && o.stop_at_target) {
    *why = StopReason::kTarget;
  } else if (selector.out_of_patience()) {
    *why = StopReason::kNoImprovement;
  } else if (o.max_rounds > 0 && st.round >= o.max_rounds) {
    *why = StopReason::kMaxRounds;
  } else if (epoch_limit > 0 && consumed >= epoch_limit) {
    *why = StopReason::kMaxEpochs;
  } else if (o.time_budget_s > 0.0 && st.train_seconds >= o.time_budget_s) {
    *why = StopReason::kTimeBudget;
  } else {
    return false;
  }
  return true;
}

std::vector<DeviceSummary> gather_summaries(NodeGroup& nodes, std::vector<DeviceSummary> local) {
  if (!nodes.multi()) return local;
  // Plain JSON text per rank: a few devices, once per run.
  const nlohmann::json mine = local;
  std::vector<DeviceSummary> out;
  const std::vector<std::string> all = nodes.cluster().allgather(mine.dump());
  for (std::size_t r = 0; r < all.size(); ++r) {
    for (const nlohmann::json& j : nlohmann::json::parse(all[r])) {
      DeviceSummary d = j.get<DeviceSummary>();
      d.rank = static_cast<int>(r);
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace hetsgd
