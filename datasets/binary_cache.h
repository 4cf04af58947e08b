/// \file datasets/binary_cache.h
/// A versioned, checksummed, memory-mappable binary image of a Dataset.
///
/// A large text file is parsed once and reloaded in a fraction of the time. Layout (native
/// little-endian; all offsets 8-byte aligned):
///
///     offset  size  field
///     0       8     magic "HETSGDDS"
///     8       4     format version (uint32, kCacheVersion)
///     12      4     byte-order mark 0x01020304 (uint32, as written by the producer)
///     16      40    rows, num_features, num_labels, nnz, label_nnz (5 x int64)
///     56      8     reserved, zero
///     64            x_indptr  (rows + 1) x int64
///                   y_indptr  (rows + 1) x int64
///                   x_indices nnz x int32
///                   x_values  nnz x float32
///                   y_indices label_nnz x int32
///                   zero padding to a multiple of 8 bytes
///     end - 8 8     checksum (uint64, core/checksum.h) of every byte before it
#pragma once

#include <cstdint>
#include <string>

#include "core/dataset.h"

namespace hetsgd::datasets {

/// Version written by save_cache; load_cache rejects any other.
inline constexpr std::uint32_t kCacheVersion = 1;
/// The eight bytes every cache file starts with.
inline constexpr char kCacheMagic[9] = "HETSGDDS";

/// Writes `data` to `path` atomically (temporary file + rename), so a crash never leaves a
/// truncated cache under the final name. Throws InvalidArgument if `data` does not validate
/// and IoError if the file cannot be written.
void save_cache(const Dataset& data, const std::string& path);

/// Memory-maps `path`, checks magic, version, byte order, the array sizes against the file
/// length and the checksum, then copies the arrays into a Dataset and validates it.
/// Throws IoError naming the file and the offending value and bound for: a missing file, a
/// wrong magic, an unsupported version, a truncated (or over-long) file, a checksum mismatch,
/// and ids or offsets out of range.
Dataset load_cache(const std::string& path);

/// True when `path` exists and starts with kCacheMagic. Never throws.
bool is_cache_file(const std::string& path);

}  // namespace hetsgd::datasets
