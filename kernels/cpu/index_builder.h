/// \file kernels/cpu/index_builder.h
/// IndexBuilder: builds LabelIndexes from the output layer's weights on a background thread,
/// for one shortlisted CPU replica or for all of a process's replicas together.
///
/// start() codes the label vectors (LabelIndex::encode, in the caller's arena) straight into
/// the records of a new graph (LabelIndex::stage: no separate snapshot) and hands the graph to
/// the builder's worker: one long-lived thread per builder, made at the first start() and
/// joined by the destructor, running at a lower priority (nice 10 on Linux) than training.
/// The finished index becomes latest(); users install it when their schedule says
/// (Shortlist::refresh), waiting for it with wait_for() if it is not done by then. One replica
/// then holds at most two indexes: the one in use and the one being built, which frees its
/// insertion state when it ends (kernels/README.md, "The index's memory"). Replicas that share
/// one builder share its builds: at 670,091 labels a build is 30 s of one core, and two
/// workers on two cores that each built their own spent a quarter of the machine on indexes
/// of nearly the same weights.
/// Thread-safe: any number of replicas may call start(), wait_for() and latest() concurrently.
/// Destruction cancels a running build.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/model_config.h"
#include "kernels/cpu/label_index.h"

namespace hetsgd::cpu {

class IndexBuilder {
 public:
  /// Builds indexes over `config`'s output layer with its ShortlistConfig's HNSW parameters.
  explicit IndexBuilder(const ModelConfig& config);
  ~IndexBuilder();
  IndexBuilder(const IndexBuilder&) = delete;
  IndexBuilder& operator=(const IndexBuilder&) = delete;

  /// Starts a build from `w` [L x hidden] and `b` [L] unless one is running or being started
  /// by another caller, and returns the ticket of the build that serves the caller: the one it
  /// started, or that running one (tickets count builds started, from 1). Rethrows the error
  /// of a failed earlier build (once). With `subset` (label ids) the build covers only those
  /// labels: a cheaper index (see Shortlist's first build).
  std::int64_t start(const float* w, const float* b, const std::vector<col_t>* subset = nullptr);
  /// Waits until the build of `ticket` has ended (built, cancelled or failed) and rethrows
  /// its error, if it failed. latest() is then that build's index, or a newer one.
  void wait_for(std::int64_t ticket);
  /// Waits for the running build, if any, and rethrows its error, if it failed.
  void wait();
  /// Cancels the running build, if any, waits for it to stop and drops latest(): the memory
  /// of both goes (a later start() builds anew).
  void release();
  /// The newest finished index (null before the first build finished).
  std::shared_ptr<const LabelIndex> latest() const;
  /// Builds finished so far.
  std::int64_t builds() const;
  /// Test hook: each build from now on waits `delay` before it starts (a slow builder).
  void delay_builds(std::chrono::milliseconds delay);
  /// Test hook without a clock: from now on only `n` more builds start; the others wait
  /// (running, so that start() hands their ticket to other callers) until a later call lets
  /// them through, release() or the destructor. A negative `n` lifts the limit (the default).
  void allow_builds(std::int64_t n);

  /// An index over `w`, `b` built now, on the calling thread (prediction, tests); it does not
  /// become latest().
  std::shared_ptr<const LabelIndex> build_now(const float* w, const float* b) const;

 private:
  struct Job {
    std::shared_ptr<LabelIndex> index;
    std::vector<col_t> ids;  ///< the subset's label ids (empty: every label)
  };
  /// Stages `out` (LabelIndex::stage) for the labels of `subset` (all when null) and codes
  /// their vectors from `w` [L x hidden] and `b` [L] into it, in the caller's arena.
  void encode_labels(const float* w, const float* b, LabelIndex* out,
                     const std::vector<col_t>* subset = nullptr) const;
  void work();  // the worker thread's loop
  void finish(std::shared_ptr<LabelIndex> index, std::exception_ptr error);  // with mu_ held
  void rethrow_error();                                                      // with mu_ held

  index_t num_labels_;
  index_t hidden_;
  LabelIndexParams params_;
  std::mutex mu_;                    ///< guards everything below up to latest_mu_
  std::condition_variable work_cv_;  ///< the worker waits here for a job or the end
  std::condition_variable done_cv_;  ///< waiters for a build's end wait here
  /// The worker. A plain thread rather than a TBB task: a TBB arena only gets workers the
  /// global pool can spare, and while the training arenas hold them all the build would not
  /// start before an install step waited for it. One thread for the builder's life rather
  /// than one a build: see kernels/README.md, "The builder thread".
  std::thread worker_;
  std::unique_ptr<Job> job_;  ///< handed to the worker, not yet taken
  bool running_ = false;      ///< a build is being started, queued or built
  bool stop_ = false;         ///< the destructor asks the worker to end
  std::int64_t started_ = 0;  ///< tickets handed out
  std::int64_t ended_ = 0;    ///< builds ended (tickets 1..ended_)
  std::chrono::milliseconds delay_{0};
  std::int64_t allowed_ = -1;  ///< builds that may still start (negative: any number)
  std::exception_ptr error_;
  mutable std::mutex latest_mu_;  ///< guards latest_ and builds_ only: never held for long
  std::shared_ptr<const LabelIndex> latest_;
  std::int64_t builds_ = 0;
  std::atomic<bool> cancel_{false};
};

}  // namespace hetsgd::cpu
