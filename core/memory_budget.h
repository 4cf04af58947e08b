/// \file core/memory_budget.h
/// How much memory this process may still take, and a check that refuses, before allocating,
/// what cannot fit.
///
/// Sizes in files (a header declaring 2^31-1 labels) and options (`--hidden` at its maximum)
/// would otherwise turn into a bare std::bad_alloc or an OOM kill after minutes of work. A
/// caller estimates what it is about to allocate from the shapes alone and calls
/// check_memory(), which throws MemoryBudgetExceeded naming the estimate and the bound.
/// Thread-safe (reads /proc and sysconf only).
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/types.h"

namespace hetsgd {

/// An allocation estimated from shapes would not fit in the memory available.
struct MemoryBudgetExceeded : Error {
  using Error::Error;
};

/// Bytes this process can still allocate: the smallest of MemAvailable (/proc/meminfo,
/// falling back to sysconf free pages), the cgroup v2 limit minus current usage when one is
/// set, and the address-space rlimit. The environment variable HETSGD_MEMORY_LIMIT (bytes,
/// or with a K/M/G/T suffix) lowers the bound further (tests, shared servers).
std::uint64_t available_memory_bytes();

/// Throws MemoryBudgetExceeded "<what> needs about X GiB (N bytes) but only Y GiB (M bytes)
/// are available" when `estimate_bytes` exceeds available_memory_bytes(). `what` says what
/// would be allocated and from which shape ("data stats of 'a.txt' (2147483647 labels)").
void check_memory(std::uint64_t estimate_bytes, const std::string& what);

/// `a * b` for byte estimates, saturating at UINT64_MAX instead of wrapping.
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b);
/// `a + b`, saturating at UINT64_MAX.
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b);

/// "1.5 GiB" style rendering of a byte count (for messages).
std::string format_bytes(std::uint64_t bytes);

/// What a training run holds beside its replicas, as the memory estimate of its replicas
/// (kernels/replicas.h) needs it; TrainOptions::footprint() says it of a run's options, and
/// evaluation and prediction pass none.
struct RunFootprint {
  /// A shortlisted output layer's gradient is written in full (sync), not row by row.
  bool dense_output_gradient = false;
  bool centre_history = false;  ///< Z_prev on the host (block momentum, EASGD's exchange)
  bool elastic = false;         ///< EASGD: the dense merge's average and scratch on the host
  bool best_in_memory = false;  ///< keep-best's copy of the model in memory (not in a file)
  bool average = false;         ///< the moving average of the centre (--ema)
  /// Most rows a scoring buffer holds (an evaluation or a training batch); 2,048 is the
  /// default evaluation batch, what a run without options scores at a time.
  index_t batch_rows = 2048;
};

}  // namespace hetsgd
