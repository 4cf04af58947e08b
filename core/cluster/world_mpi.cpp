// world_cluster() with Open MPI: MPI is initialised only when a launcher started this process
// (core/cluster/launcher_env.h), with MPI_THREAD_MULTIPLE because device workers take batches
// from the shared cursor while the scheduler thread waits. The shared counters live in a
// one-sided window on rank 0 (MPI_Win_allocate, so Open MPI uses its shared-memory window on
// one machine), read and bumped with MPI_Fetch_and_op under one lock_all epoch for the run.
// gather_to_root() sends point to point, chunk by chunk, so that neither a count nor a
// displacement has to fit an int.
#include <mpi.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <string>

#include "core/cluster/cluster.h"
#include "core/cluster/gather_chunks.h"
#include "core/cluster/launcher_env.h"
#include "core/error.h"
#include "core/memory_budget.h"

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

// The only point-to-point messages on MPI_COMM_WORLD are gather_to_root()'s chunks.
constexpr int kGatherTag = 0x4753;

class MpiCluster final : public Cluster {
 public:
  // A bad HETSGD_GATHER_CHUNK fails here, at the start, not at the first checkpoint.
  MpiCluster() : chunk_bound_(gather_chunk_from_env()) {
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
  std::vector<std::string> gather_to_root(const std::string& mine) override {
    const std::uint64_t len = mine.size();
    std::vector<std::uint64_t> lens(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
    check_mpi(MPI_Gather(&len, 1, MPI_UINT64_T, lens.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD),
              "MPI_Gather");
    // Rank 0 allocates everything before a byte moves and tells every rank whether to go on
    // and with which bound (its own: the ranks' environments may differ), so a refusal is one
    // decision all ranks follow instead of a rank that leaves the others waiting mid-send.
    std::vector<std::string> out;
    std::string refused;
    std::uint64_t plan = chunk_bound_;  // 0: refused
    if (rank_ == 0) {
      std::uint64_t total = 0;
      for (std::uint64_t l : lens) total = saturating_add(total, l);
      try {
        check_memory(total, "gathering " + std::to_string(size_) + " ranks' bytes on rank 0");
        out.resize(lens.size());
        out[0] = mine;
        for (std::size_t r = 1; r < lens.size(); ++r) out[r].resize(lens[r]);
      } catch (const MemoryBudgetExceeded& e) {
        refused = e.what();
      } catch (const std::bad_alloc&) {
        refused = "rank 0 ran out of memory for " + format_bytes(total) + " (" +
                  std::to_string(total) + " bytes)";
      }
      if (!refused.empty()) {
        out = std::vector<std::string>();
        plan = 0;
      }
    }
    check_mpi(MPI_Bcast(&plan, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (plan == 0) {
      throw GatherRefused(rank_ == 0 ? refused : "rank 0 could not hold the gathered bytes");
    }
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) {
        std::string& dst = out[static_cast<std::size_t>(r)];
        for (std::uint64_t k = 0; k < chunk_count(dst.size(), plan); ++k) {
          const ByteChunk c = chunk_at(dst.size(), plan, k);
          check_mpi(MPI_Recv(dst.data() + c.offset, c.bytes, MPI_BYTE, r, kGatherTag,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                    "MPI_Recv");
          ++chunks_;
        }
      }
    } else {
      for (std::uint64_t k = 0; k < chunk_count(len, plan); ++k) {
        const ByteChunk c = chunk_at(len, plan, k);
        check_mpi(
            MPI_Send(mine.data() + c.offset, c.bytes, MPI_BYTE, 0, kGatherTag, MPI_COMM_WORLD),
            "MPI_Send");
        ++chunks_;
      }
    }
    return out;
  }
  std::int64_t gathered_chunks() const override { return chunks_; }
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
  const std::uint64_t chunk_bound_;
  std::int64_t chunks_ = 0;
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
