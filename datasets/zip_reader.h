/// \file datasets/zip_reader.h
/// The zip archives numpy writes (`.npz`): enough of the format to read them, no more.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace hetsgd::datasets {

/// The little-endian unsigned integer in the `bytes` bytes at `p` (zip and .npy headers).
std::uint64_t read_le(const char* p, int bytes);

/// The members of the zip archive `z`, by name, inflated: methods 0 (stored) and 8 (deflate),
/// zip64 sizes and offsets in the extra field. Every count, offset and size is checked against
/// the archive's size before it is used, and a deflated member may not claim more than deflate
/// can expand to; the inflated size is checked against the memory available. Throws IoError
/// `<path>: member '<name>': <what>` for a damaged archive, MemoryBudgetExceeded when a member
/// does not fit.
std::map<std::string, std::string> read_zip_members(std::string_view z, const std::string& path);

}  // namespace hetsgd::datasets
