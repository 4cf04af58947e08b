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
#include <string_view>

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

/// Memory-maps `path` (a regular file), checks magic, version, byte order, every header count
/// (non-negative, id spaces <= 2^31, array sizes against the file length, so no size can
/// overflow) and the checksum; then checks the content in place by the text readers' rules
/// (core/dataset.h validate_csr: offsets start at 0, never decrease and end at nnz; ids within
/// bounds; feature ids of a row sorted and unique; labels of a row unique; values finite;
/// zero padding) and the memory it needs (core/memory_budget.h), and only then copies the
/// arrays into a Dataset. Throws IoError naming the file, the field, the value and the bound.
Dataset load_cache(const std::string& path);

/// load_cache on bytes already in memory; `name` stands for the file in messages.
Dataset parse_cache(std::string_view bytes, const std::string& name);

/// True when `path` exists and starts with kCacheMagic. Never throws.
bool is_cache_file(const std::string& path);

}  // namespace hetsgd::datasets
