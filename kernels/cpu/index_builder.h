/// \file kernels/cpu/index_builder.h
/// IndexBuilder: builds LabelIndexes from the output layer's weights on a background thread,
/// for one shortlisted CPU replica or for all of a process's replicas together.
///
/// start() codes the label vectors (LabelIndex::encode, in the caller's arena) straight into
/// the records of a new graph (LabelIndex::stage: no separate snapshot) and builds it on a
/// plain thread at a lower priority (nice 10 on Linux) than training; the finished index
/// becomes latest(). Users swap it in at their own pace (Shortlist::refresh). One replica
/// then holds at most two indexes: the one in use and the one being built, which frees its
/// insertion state when it ends (kernels/README.md, "The index's memory"); the builder
/// thread hands freed heap pages back to the system (malloc_trim) before and after each
/// build. Replicas that share one builder share its builds: at 670,091 labels a build is 30 s
/// of one core, and two workers on two cores that each built their own spent a quarter of the
/// machine on indexes of nearly the same weights.
/// Thread-safe: any number of replicas may call start() and latest() concurrently.
/// Destruction cancels a running build.
#pragma once

#include <atomic>
#include <chrono>
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

  /// Starts a build from `w` [L x hidden] and `b` [L] unless a build is running or being
  /// started by another caller, or, when `spaced`, builds have run more than
  /// ShortlistConfig::index_duty of the time since the last one finished. Returns true when it
  /// started one. Rethrows the error of a failed earlier build (once). With `subset` (label
  /// ids) the build covers only those labels: a cheaper index (see Shortlist's first build).
  bool start(const float* w, const float* b, bool spaced,
             const std::vector<col_t>* subset = nullptr);
  /// Waits for the running build, if any, and rethrows its error, if it failed.
  void wait();
  /// Cancels the running build, if any, waits for it to stop and drops latest(): the memory
  /// of both goes (a later start() builds anew).
  void release();
  /// The newest finished index (null before the first build finished).
  std::shared_ptr<const LabelIndex> latest() const;
  /// Builds finished so far.
  std::int64_t builds() const;

  /// An index over `w`, `b` built now, on the calling thread (prediction, tests); it does not
  /// become latest().
  std::shared_ptr<const LabelIndex> build_now(const float* w, const float* b) const;

 private:
  /// Stages `out` (LabelIndex::stage) for the labels of `subset` (all when null) and codes
  /// their vectors from `w` [L x hidden] and `b` [L] into it, in the caller's arena.
  void encode_labels(const float* w, const float* b, LabelIndex* out,
                     const std::vector<col_t>* subset = nullptr) const;
  void rethrow_error();  // with mu_ held

  index_t num_labels_;
  index_t hidden_;
  double duty_;
  LabelIndexParams params_;
  std::mutex mu_;  ///< guards the build's state below, held while a build is started
  /// The running (or last, not yet joined) build. A plain thread rather than a TBB task: a
  /// TBB arena only gets workers the global pool can spare, and while the training arenas
  /// hold them all the build would not start before a rebuild point waited for it.
  std::thread thread_;
  bool running_ = false;          ///< a build runs (set under mu_)
  mutable std::mutex latest_mu_;  ///< guards latest_ and builds_ only: never held for long
  std::shared_ptr<const LabelIndex> latest_;
  std::int64_t builds_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> cancel_{false};
  using Clock = std::chrono::steady_clock;
  Clock::time_point build_end_;
  double last_build_s_ = 0.0;  ///< wall time of the last finished build (0: none yet)
};

}  // namespace hetsgd::cpu
