#include "kernels/cpu/index_builder.h"

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

}  // namespace

IndexBuilder::IndexBuilder(const ModelConfig& config)
    : num_labels_(config.num_labels), hidden_(config.hidden.back()) {
  params_.m = config.shortlist.ann_m;
  params_.ef_construction = config.shortlist.ann_ef_construction;
  params_.ef_search = config.shortlist.ann_ef_search;
}

IndexBuilder::~IndexBuilder() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cancel_.store(true);
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
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

void IndexBuilder::finish(std::shared_ptr<LabelIndex> index, std::exception_ptr error) {
  if (index != nullptr) {
    const std::lock_guard<std::mutex> publish(latest_mu_);
    latest_ = std::move(index);
    ++builds_;
  }
  if (error) error_ = error;
  ++ended_;
  running_ = false;
  done_cv_.notify_all();
}

void IndexBuilder::work() {
  lower_priority();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
    if (stop_) {
      if (job_ != nullptr) finish(nullptr, nullptr);  // wakes anyone waiting for it
      return;
    }
    std::unique_ptr<Job> job = std::move(job_);
    if (delay_.count() > 0) {
      work_cv_.wait_for(lock, delay_, [&] { return stop_ || cancel_.load(); });
    }
    // A test's hold (allow_builds): the build stays running meanwhile, so that every start()
    // until it is let through shares it, whatever the threads' timing.
    work_cv_.wait(lock, [&] { return stop_ || cancel_.load() || allowed_ != 0; });
    if (allowed_ > 0) --allowed_;
    lock.unlock();
    std::exception_ptr error;
    bool built = false;
    try {
      built = job->index->build_staged(&cancel_, job->ids.empty() ? nullptr : job->ids.data());
    } catch (...) {
      error = std::current_exception();
    }
    // The graph and the ids go here, on this thread, unless the index is published.
    std::shared_ptr<LabelIndex> index = built ? std::move(job->index) : nullptr;
    job.reset();
    lock.lock();
    finish(std::move(index), error);
  }
}

std::int64_t IndexBuilder::start(const float* w, const float* b, const std::vector<col_t>* subset) {
  std::int64_t ticket = 0;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    rethrow_error();
    // A replica that finds a build running or being started goes on: that build serves it.
    if (running_) return started_;
    if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
    running_ = true;
    ticket = ++started_;
  }
  // The snapshot of the weights is coded straight into the new graph's records (see
  // LabelIndex::stage), on this thread, in the caller's arena, without mu_: waiters and the
  // worker need it meanwhile.
  auto job = std::make_unique<Job>();
  try {
    job->index = std::make_shared<LabelIndex>();
    encode_labels(w, b, job->index.get(), subset);
    if (subset != nullptr) job->ids = *subset;
  } catch (...) {
    const std::lock_guard<std::mutex> lock(mu_);
    finish(nullptr, nullptr);
    throw;
  }
  {
    const std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
  }
  work_cv_.notify_all();
  return ticket;
}

void IndexBuilder::wait_for(std::int64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return ended_ >= ticket; });
  rethrow_error();
}

void IndexBuilder::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return !running_; });
  rethrow_error();
}

void IndexBuilder::release() {
  std::unique_lock<std::mutex> lock(mu_);
  cancel_.store(true);
  work_cv_.notify_all();  // ends a test delay or hold
  done_cv_.wait(lock, [&] { return !running_; });
  cancel_.store(false);
  lock.unlock();
  const std::lock_guard<std::mutex> publish(latest_mu_);
  latest_.reset();
}

void IndexBuilder::delay_builds(std::chrono::milliseconds delay) {
  const std::lock_guard<std::mutex> lock(mu_);
  delay_ = delay;
}

void IndexBuilder::allow_builds(std::int64_t n) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    allowed_ = n;
  }
  work_cv_.notify_all();
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
