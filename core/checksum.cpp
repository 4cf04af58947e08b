#include "core/checksum.h"

#include <cstring>

#include "core/random.h"

namespace hetsgd {

void Checksum::update(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);  // unaligned-safe load
    state_ = (state_ ^ w) * 0x9FB21C651E98DF25ull;
    state_ ^= state_ >> 29;
  }
  if (i < size) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, size - i);
    state_ = (state_ ^ w ^ (static_cast<std::uint64_t>(size - i) << 56)) * 0x9FB21C651E98DF25ull;
    state_ ^= state_ >> 29;
  }
  length_ += size;
}

std::uint64_t Checksum::digest() const { return mix64(state_ ^ length_); }

std::uint64_t checksum64(const void* data, std::size_t size) {
  Checksum c;
  c.update(data, size);
  return c.digest();
}

}  // namespace hetsgd
