/// \file kernels/cpu/parallel.h
/// Fixed-size block loops for the CPU backend.
///
/// Work is cut into blocks whose size does not depend on the thread count, and every output
/// element is produced by exactly one block with a fixed summation order, so results are
/// bit-identical whatever the arena size (1 thread or 64). Call from inside the device's
/// tbb::task_arena so the blocks run on that arena's threads only.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "core/types.h"

namespace hetsgd::cpu {

/// Calls `fn(begin, end)` for consecutive blocks of `block` items covering [0, n), possibly in
/// parallel. Single-block ranges run inline, without a TBB task.
template <typename Fn>
void for_blocks(index_t n, index_t block, const Fn& fn) {
  if (n <= 0) return;
  const index_t blocks = (n + block - 1) / block;
  if (blocks == 1) {
    fn(index_t{0}, n);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<index_t>(0, blocks, 1),
      [&](const tbb::blocked_range<index_t>& r) {
        for (index_t b = r.begin(); b < r.end(); ++b) {
          const index_t begin = b * block;
          const index_t end = begin + block < n ? begin + block : n;
          fn(begin, end);
        }
      },
      tbb::simple_partitioner());
}

}  // namespace hetsgd::cpu
