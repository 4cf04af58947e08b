/// \file core/atomic_file.h
/// Writing files so that a crash never leaves a half-written model or checkpoint behind.
#pragma once

#include <string>

namespace hetsgd {

/// Writes `bytes` to `path` atomically: into `path.tmp.<pid>` first, flushed and fsync'ed, then
/// renamed over `path`. Throws IoError naming the path on any failure (the temp file is removed).
void write_file_atomic(const std::string& path, const std::string& bytes);

/// Reads a whole file; throws IoError naming the path when it cannot be opened or read.
std::string read_file(const std::string& path);

}  // namespace hetsgd
