/// \file core/checksum.h
/// A streaming 64-bit checksum for every file hetsgd writes: dataset caches, model files and
/// checkpoints (FNV-1a style, four 64-bit lanes).
///
/// Each lane absorbs every fourth 64-bit word as `lane = (lane ^ word) * prime`; the step is a
/// bijection of the lane state, so changing any single word (in particular any bit flip)
/// always changes the result. Four independent lanes let the multiplies overlap, which keeps
/// the cost far below the disk read (several GB/s on one core). Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetsgd {

/// Incremental checksum: update() with any split of the bytes gives the same finish().
class Checksum64 {
 public:
  Checksum64();
  /// Absorbs `bytes` bytes at `data`.
  void update(const void* data, std::size_t bytes);
  /// The checksum of everything absorbed so far (the object stays usable).
  std::uint64_t finish() const;

 private:
  void absorb_block(const unsigned char* block);

  std::uint64_t lanes_[4];
  unsigned char pending_[32];
  std::size_t pending_bytes_ = 0;
  std::uint64_t total_bytes_ = 0;
};

/// One-shot convenience: the checksum of `bytes` bytes at `data`.
std::uint64_t checksum64(const void* data, std::size_t bytes);

}  // namespace hetsgd
