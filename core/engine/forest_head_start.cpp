#include "core/engine/forest_head_start.h"

#include <sched.h>

#include <exception>
#include <utility>

namespace hetsgd {

ForestHeadStart::ForestHeadStart(const Dataset& rows, const ForestOptions& options, int limit)
    : rows_(rows) {
  thread_ = std::thread([this, options, limit] {
    // SCHED_IDLE: the thread runs only on a core nothing else wants, so the training beside it
    // keeps its cores (a nice level would still take a share of them). Where the policy is
    // refused the trees grow at the normal priority.
    sched_param none{};
    sched_setscheduler(0, SCHED_IDLE, &none);
    try {
      trees_ = LabelForest::grow_ahead(rows_, options, limit, halt_);
    } catch (const std::exception&) {
      // Out of memory, say: the forest's growth after training grows every tree itself and
      // meets the error there, where it is reported.
      trees_.clear();
    }
  });
}

ForestHeadStart::~ForestHeadStart() {
  halt_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<LabelForest> ForestHeadStart::finish() {
  halt_ = true;
  if (thread_.joinable()) thread_.join();
  return std::move(trees_);
}

}  // namespace hetsgd
