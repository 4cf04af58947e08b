/// \file tests/fuzz/fuzz_support.h
/// What every harness shares: a reader may refuse its input only with a hetsgd::Error (whose
/// message names the input); any other exception escapes to libFuzzer and is a finding, as
/// is a crash, a sanitizer report, a hang or a memory blow-up.
#pragma once

#include <tbb/global_control.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/checksum.h"
#include "core/error.h"

namespace hetsgd::fuzz {

/// The bytes libFuzzer hands over, as text.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `read`; a hetsgd::Error is an accepted refusal and must name `name`.
template <class Fn>
void expect_clean(const std::string& name, Fn&& read) {
  try {
    read();
  } catch (const Error& e) {
    if (std::string_view(e.what()).find(name) == std::string_view::npos) __builtin_trap();
  }
}

/// The input with its last 8 bytes replaced by the checksum of the others: random mutations
/// almost never keep a checksum valid, so without this the checks behind it go unexplored.
inline std::string resealed(std::string_view bytes) {
  std::string b(bytes);
  if (b.size() < 8) return b;
  const std::uint64_t sum = checksum64(b.data(), b.size() - 8);
  std::memcpy(b.data() + b.size() - 8, &sum, sizeof sum);
  return b;
}

/// One parser thread: findings reproduce exactly and libFuzzer's per-input timing is honest.
inline void single_thread() {
  static tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
}

}  // namespace hetsgd::fuzz
