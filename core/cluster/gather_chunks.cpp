#include "core/cluster/gather_chunks.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace hetsgd {

std::uint64_t chunk_count(std::uint64_t total, std::uint64_t bound) {
  HETSGD_CHECK(bound >= 1 && bound <= kMaxGatherChunk,
               "gather chunk of " << bound << " bytes outside [1, " << kMaxGatherChunk << "]");
  return total / bound + (total % bound != 0 ? 1 : 0);
}

ByteChunk chunk_at(std::uint64_t total, std::uint64_t bound, std::uint64_t k) {
  HETSGD_CHECK(k < chunk_count(total, bound),
               "chunk " << k << " of a " << total << "-byte message in chunks of " << bound);
  ByteChunk c;
  c.offset = k * bound;  // < total, so no overflow
  c.bytes = static_cast<int>(total - c.offset < bound ? total - c.offset : bound);
  return c;
}

std::uint64_t parse_gather_chunk(const char* text) {
  const std::string s = text;
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  std::uint64_t scale = 0;
  const std::string suffix = s.substr(digits);
  if (suffix.empty()) scale = 1;
  if (suffix == "K" || suffix == "k") scale = std::uint64_t{1} << 10;
  if (suffix == "M" || suffix == "m") scale = std::uint64_t{1} << 20;
  if (suffix == "G" || suffix == "g") scale = std::uint64_t{1} << 30;
  // Eleven digits already exceed the bound in bytes: no overflow below.
  const bool parsed = digits > 0 && digits <= 10 && scale != 0;
  const std::uint64_t bytes = parsed ? std::stoull(s.substr(0, digits)) * scale : 0;
  HETSGD_CHECK(parsed && bytes >= 1 && bytes <= kMaxGatherChunk,
               "HETSGD_GATHER_CHUNK='" << s << "': expected a byte count from 1 to "
                                       << kMaxGatherChunk
                                       << " (2 GiB - 1), optionally with a K, M or G suffix");
  return bytes;
}

std::uint64_t gather_chunk_from_env() {
  const char* env = std::getenv("HETSGD_GATHER_CHUNK");
  if (env == nullptr || *env == '\0') return kDefaultGatherChunk;
  return parse_gather_chunk(env);
}

}  // namespace hetsgd
