/// \file core/cluster/gather_chunks.h
/// How Cluster::gather_to_root() cuts one rank's bytes into messages: MPI counts are `int`,
/// so a message holds at most INT_MAX bytes, while a rank's checkpoint slots (optimiser state
/// and replicas) may hold many GiB. Sizes are 64-bit throughout; only a chunk's length is an
/// int, and the bound keeps it one.
#pragma once

#include <cstdint>

namespace hetsgd {

/// The chunk bound without HETSGD_GATHER_CHUNK: 256 MiB, far below INT_MAX, and large enough
/// that a message's latency is nothing next to its transfer.
inline constexpr std::uint64_t kDefaultGatherChunk = std::uint64_t{256} << 20;
/// The largest bound: a chunk's length must fit an MPI count (int).
inline constexpr std::uint64_t kMaxGatherChunk = 2147483647;

/// One chunk: bytes [offset, offset + bytes) of the message.
struct ByteChunk {
  std::uint64_t offset = 0;
  int bytes = 0;
};

/// Number of chunks of at most `bound` bytes that carry `total` bytes (0 for none).
/// `bound` must lie in [1, kMaxGatherChunk].
std::uint64_t chunk_count(std::uint64_t total, std::uint64_t bound);
/// Chunk `k` (< chunk_count) of `total` bytes: every chunk but the last holds `bound` bytes.
ByteChunk chunk_at(std::uint64_t total, std::uint64_t bound, std::uint64_t k);

/// The bound `text` gives: a positive byte count, optionally with a K, M or G suffix (powers
/// of 1024), at most kMaxGatherChunk. Throws InvalidArgument naming HETSGD_GATHER_CHUNK, the
/// value and the bound otherwise.
std::uint64_t parse_gather_chunk(const char* text);
/// The bound from the environment variable HETSGD_GATHER_CHUNK (tests lower it to a few KiB so
/// that small checkpoints travel in several chunks), or kDefaultGatherChunk when it is unset or
/// empty.
std::uint64_t gather_chunk_from_env();

}  // namespace hetsgd
