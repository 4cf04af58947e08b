/// \file core/checksum.h
/// A fast 64-bit checksum for file integrity (not cryptographic).
///
/// Processes 8 bytes per step with a multiply-xorshift mix, so checking a multi-GB cache runs
/// near memory bandwidth. Stable across platforms of the same endianness (little-endian only,
/// which every supported target is).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetsgd {

/// Incremental checksum: update() with any chunking gives the same digest as one call over the
/// concatenation only when chunk sizes are multiples of 8; callers that stream use 8-aligned
/// chunks (the final chunk may be shorter).
class Checksum {
 public:
  /// Adds `size` bytes at `data`.
  void update(const void* data, std::size_t size);
  /// The digest of everything added so far.
  std::uint64_t digest() const;

 private:
  std::uint64_t state_ = 0x6A09E667F3BCC909ull;
  std::uint64_t length_ = 0;
};

/// One-shot checksum of a buffer.
std::uint64_t checksum64(const void* data, std::size_t size);

}  // namespace hetsgd
