#include "core/checksum.h"

#include <algorithm>
#include <cstring>

#include "core/random.h"

namespace hetsgd {
namespace {
constexpr std::uint64_t kFnvOffset = 0xCBF29CE484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001B3ull;
}  // namespace

Checksum64::Checksum64() {
  for (int i = 0; i < 4; ++i) lanes_[i] = kFnvOffset + static_cast<std::uint64_t>(i);
}

void Checksum64::absorb_block(const unsigned char* block) {
  for (int i = 0; i < 4; ++i) {
    std::uint64_t w;
    std::memcpy(&w, block + 8 * i, 8);  // unaligned-safe; compiles to one load
    lanes_[i] = (lanes_[i] ^ w) * kFnvPrime;
  }
}

void Checksum64::update(const void* data, std::size_t bytes) {
  if (bytes == 0) return;  // `data` may be null for an empty array
  const auto* p = static_cast<const unsigned char*>(data);
  total_bytes_ += bytes;
  if (pending_bytes_ > 0) {
    const std::size_t take = std::min(bytes, sizeof(pending_) - pending_bytes_);
    std::memcpy(pending_ + pending_bytes_, p, take);
    pending_bytes_ += take;
    p += take;
    bytes -= take;
    if (pending_bytes_ < sizeof(pending_)) return;
    absorb_block(pending_);
    pending_bytes_ = 0;
  }
  for (; bytes >= 32; bytes -= 32, p += 32) absorb_block(p);
  std::memcpy(pending_, p, bytes);
  pending_bytes_ = bytes;
}

std::uint64_t Checksum64::finish() const {
  std::uint64_t lanes[4] = {lanes_[0], lanes_[1], lanes_[2], lanes_[3]};
  // Tail bytes go byte-wise into lane 0 (classic FNV-1a), then the lanes are chained
  // through the SplitMix64 finaliser together with the length.
  for (std::size_t i = 0; i < pending_bytes_; ++i) lanes[0] = (lanes[0] ^ pending_[i]) * kFnvPrime;
  std::uint64_t h = mix64(total_bytes_);
  for (std::uint64_t lane : lanes) h = mix64(h ^ lane);
  return h;
}

std::uint64_t checksum64(const void* data, std::size_t bytes) {
  Checksum64 c;
  c.update(data, bytes);
  return c.finish();
}

}  // namespace hetsgd
