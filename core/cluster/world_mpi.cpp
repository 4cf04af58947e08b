// world_cluster() with Open MPI: MPI is initialised only when a launcher started this process
// (core/cluster/launcher_env.h), with MPI_THREAD_MULTIPLE because device workers take batches
// from the shared cursor while the scheduler thread waits. The shared counters live in a
// one-sided window on rank 0 (MPI_Win_allocate, so Open MPI uses its shared-memory window on
// one machine), read and bumped with MPI_Fetch_and_op under one lock_all epoch for the run.
#include <mpi.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/cluster/cluster.h"
#include "core/cluster/launcher_env.h"
#include "core/error.h"

namespace hetsgd {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("MPI: ") + what + " failed: " + std::string(text, len) +
              " (a rank was probably lost; restart the job with --resume)");
}

int to_count(index_t n) {
  HETSGD_CHECK(n >= 0 && n <= (index_t{1} << 31) - 1, "MPI: " << n << " values in one call");
  return static_cast<int>(n);
}

class MpiCluster final : public Cluster {
 public:
  MpiCluster() {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      throw Error(
          "MPI: this MPI library does not support MPI_THREAD_MULTIPLE (needed: device "
          "workers take batches concurrently)");
    }
    // Errors come back as codes and are thrown, instead of MPI's default abort with no context.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const MPI_Aint bytes = rank_ == 0 ? kSharedCounters * sizeof(std::int64_t) : 0;
    check_mpi(
        MPI_Win_allocate(bytes, sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base_, &win_),
        "MPI_Win_allocate");
    if (rank_ == 0) {
      for (int i = 0; i < kSharedCounters; ++i) base_[i] = 0;
    }
    MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
    check_mpi(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
    // No rank may read a counter before rank 0 has zeroed it.
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

  ~MpiCluster() override {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "mpi"; }

  void allreduce_sum(float* data, index_t n) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, to_count(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
  void allreduce_sum(double* data, index_t n) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, to_count(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
  void allreduce_sum(std::int64_t* data, index_t n) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, to_count(n), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
  void allreduce_max(std::int64_t* data, index_t n) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, to_count(n), MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    check_mpi(
        MPI_Bcast(data, to_count(static_cast<index_t>(bytes)), MPI_BYTE, root, MPI_COMM_WORLD),
        "MPI_Bcast");
  }
  std::vector<std::string> allgather(const std::string& mine) override {
    int len = to_count(static_cast<index_t>(mine.size()));
    std::vector<int> lens(static_cast<std::size_t>(size_)), offsets(lens.size());
    check_mpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD),
              "MPI_Allgather");
    index_t total = 0;
    for (std::size_t r = 0; r < lens.size(); ++r) {
      offsets[r] = to_count(total);
      total += lens[r];
    }
    std::string all(static_cast<std::size_t>(to_count(total)), '\0');
    check_mpi(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(),
                             MPI_CHAR, MPI_COMM_WORLD),
              "MPI_Allgatherv");
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lens.size(); ++r) out.push_back(all.substr(offsets[r], lens[r]));
    return out;
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  std::int64_t fetch_add(SharedCounter counter, std::int64_t delta) override {
    std::int64_t before = 0;
    // Serialised per process: workers of one rank queue here, one round trip each.
    std::lock_guard<std::mutex> lock(mutex_);
    check_mpi(MPI_Fetch_and_op(&delta, &before, MPI_INT64_T, 0, static_cast<MPI_Aint>(counter),
                               MPI_SUM, win_),
              "MPI_Fetch_and_op");
    check_mpi(MPI_Win_flush(0, win_), "MPI_Win_flush");
    return before;
  }

 private:
  int rank_ = 0, size_ = 1;
  std::int64_t* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
  std::mutex mutex_;
};

std::unique_ptr<Cluster>& world_slot() {
  static std::unique_ptr<Cluster> world;
  return world;
}

}  // namespace

bool mpi_built() { return true; }

Cluster& world_cluster() {
  std::unique_ptr<Cluster>& world = world_slot();
  if (!world) {
    // Without a launcher no MPI call is made: a plain run starts as fast as without MPI, and
    // sanitizer builds see no MPI library state.
    if (launcher_world_size() > 0) {
      world = std::make_unique<MpiCluster>();
    } else {
      world = make_single_cluster();
    }
  }
  return *world;
}

void abort_job(int code) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace hetsgd
