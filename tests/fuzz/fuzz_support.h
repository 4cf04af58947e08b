/// \file tests/fuzz/fuzz_support.h
/// What every harness shares: a reader may refuse its input only with a hetsgd::Error (whose
/// message names the input); any other exception escapes to libFuzzer and is a finding, as
/// is a crash, a sanitizer report, a hang or a memory blow-up.
#pragma once

#include <tbb/global_control.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

/// One parser thread: findings reproduce exactly and libFuzzer's per-input timing is honest.
inline void single_thread() {
  static tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
}

}  // namespace hetsgd::fuzz
