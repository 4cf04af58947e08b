// The one-process cluster: what a run without mpirun (or without MPI) uses. Collectives over
// one rank leave their data as it is, so the engine runs the same code with or without MPI.
#include <array>
#include <atomic>

#include "core/cluster/cluster.h"

namespace hetsgd {
namespace {

class SingleCluster final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* name() const override { return "single"; }
  void allreduce_sum(float*, index_t) override {}
  void allreduce_sum(double*, index_t) override {}
  void allreduce_sum(std::int64_t*, index_t) override {}
  void allreduce_max(std::int64_t*, index_t) override {}
  void broadcast(void*, std::size_t, int) override {}
  std::vector<std::string> allgather(const std::string& mine) override { return {mine}; }
  std::vector<std::string> gather_to_root(const std::string& mine) override { return {mine}; }
  void barrier() override {}
  std::int64_t fetch_add(SharedCounter counter, std::int64_t delta) override {
    return counters_[static_cast<std::size_t>(counter)].fetch_add(delta);
  }

 private:
  std::array<std::atomic<std::int64_t>, kSharedCounters> counters_{};
};

}  // namespace

std::unique_ptr<Cluster> make_single_cluster() { return std::make_unique<SingleCluster>(); }

}  // namespace hetsgd
