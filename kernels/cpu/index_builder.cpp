#include "kernels/cpu/index_builder.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstring>

#include "kernels/cpu/parallel.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kSnapshotBlock = 4096;  // labels per snapshot task
constexpr int kBuilderNice = 10;          // the builder's priority below training

// The index is an aid, training the critical path: the builder runs at a lower priority, so
// on a machine whose cores the training threads fill it takes the time they leave.
void lower_priority() {
#ifdef __linux__
  // On Linux a nice value belongs to the thread; failing leaves the default priority.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kBuilderNice);
#endif
}

// glibc keeps memory freed into its arenas for reuse and returns it to the system only from the
// top of a heap; what an index frees beside live blocks (its 5 MB level pointers and its
// upper-level lists at 670,091 labels, its 27 MB of locks once glibc's dynamic mmap threshold
// has risen past them) stays resident. malloc_trim hands every free page back: at the
// amazon-670k shape with a build always running (--index-wait) it lowered the RSS by 40 MB
// (2.44 to 2.40 GB between evaluations, peak 2.50 to 2.47 GB). It runs on this thread, below
// training's priority, twice per build.
void release_free_heap() {
#ifdef __GLIBC__
  (void)malloc_trim(0);
#endif
}
}  // namespace

IndexBuilder::IndexBuilder(const ModelConfig& config)
    : num_labels_(config.num_labels),
      hidden_(config.hidden.back()),
      duty_(config.shortlist.index_duty) {
  params_.m = config.shortlist.ann_m;
  params_.ef_construction = config.shortlist.ann_ef_construction;
  params_.ef_search = config.shortlist.ann_ef_search;
}

IndexBuilder::~IndexBuilder() {
  cancel_.store(true);
  std::thread t;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
}

void IndexBuilder::encode_labels(const float* w, const float* b, LabelIndex* out,
                                 const std::vector<col_t>* subset) const {
  const index_t num_labels = subset != nullptr ? static_cast<index_t>(subset->size()) : num_labels_;
  const index_t hidden = hidden_;
  const index_t dim = hidden + 1;
  out->stage(num_labels, hidden, params_);
  for_blocks(num_labels, kSnapshotBlock, [&](index_t j0, index_t j1) {
    // Each label's vector is a row of w ([L x hidden]); its bias is appended.
    std::vector<float> row(static_cast<size_t>(dim));
    for (index_t j = j0; j < j1; ++j) {
      const index_t l = subset != nullptr ? (*subset)[j] : j;
      std::memcpy(row.data(), w + l * hidden, sizeof(float) * hidden);
      row[hidden] = b[l];
      LabelIndex::encode(row.data(), dim, out->staged_code(j));
    }
  });
}

std::shared_ptr<const LabelIndex> IndexBuilder::build_now(const float* w, const float* b) const {
  auto index = std::make_shared<LabelIndex>();
  encode_labels(w, b, index.get());
  index->build_staged();
  return index;
}

void IndexBuilder::rethrow_error() {
  if (!error_) return;
  std::exception_ptr e = error_;
  error_ = nullptr;
  std::rethrow_exception(e);
}

bool IndexBuilder::start(const float* w, const float* b, bool spaced,
                         const std::vector<col_t>* subset) {
  // A replica that finds another one starting a build goes on training: that build serves both.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || running_) return false;
  if (thread_.joinable()) thread_.join();  // finished: it cleared running_ as its last step
  rethrow_error();
  // Builds are spaced so that one runs at most index_duty of the time: the builder shares the
  // cores with training, and at 670,091 labels a build lasts many rebuild intervals.
  if (spaced && last_build_s_ > 0.0) {
    const double idle_s = std::chrono::duration<double>(Clock::now() - build_end_).count();
    if (idle_s < last_build_s_ * (1.0 / duty_ - 1.0)) return false;
  }
  // The snapshot of the weights is coded straight into the new graph's records (see
  // LabelIndex::stage), on this thread, in the caller's arena.
  auto index = std::make_shared<LabelIndex>();
  encode_labels(w, b, index.get(), subset);
  std::vector<col_t> ids;
  if (subset != nullptr) ids = *subset;
  // Set before the thread exists (it clears the flag under mu_, which this call holds); a
  // thread that cannot be made leaves no build marked as running.
  running_ = true;
  try {
    thread_ = std::thread([this, index = std::move(index), ids = std::move(ids)]() mutable {
      lower_priority();
      // What the last swap freed (the index it replaced) goes back to the system before this
      // build allocates its own: see release_free_heap().
      release_free_heap();
      const Clock::time_point t0 = Clock::now();
      std::exception_ptr error;
      bool built = false;
      try {
        built = index->build_staged(&cancel_, ids.empty() ? nullptr : ids.data());
      } catch (...) {
        error = std::current_exception();
      }
      const Clock::time_point t1 = Clock::now();
      std::vector<col_t>().swap(ids);
      if (!built) index.reset();
      // The build freed its insertion locks and label hash (LabelIndex::build_staged).
      release_free_heap();
      const std::lock_guard<std::mutex> done(mu_);
      if (built) {
        const std::lock_guard<std::mutex> publish(latest_mu_);
        latest_ = std::move(index);
        ++builds_;
      }
      error_ = error;
      build_end_ = t1;
      last_build_s_ = std::chrono::duration<double>(t1 - t0).count();
      running_ = false;
    });
  } catch (...) {
    running_ = false;
    throw;
  }
  return true;
}

void IndexBuilder::wait() {
  std::thread t;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
  const std::lock_guard<std::mutex> lock(mu_);
  rethrow_error();
}

void IndexBuilder::release() {
  cancel_.store(true);
  std::thread t;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
  cancel_.store(false);
  const std::lock_guard<std::mutex> lock(latest_mu_);
  latest_.reset();
}

std::shared_ptr<const LabelIndex> IndexBuilder::latest() const {
  const std::lock_guard<std::mutex> lock(latest_mu_);
  return latest_;
}

std::int64_t IndexBuilder::builds() const {
  const std::lock_guard<std::mutex> lock(latest_mu_);
  return builds_;
}

}  // namespace hetsgd::cpu
