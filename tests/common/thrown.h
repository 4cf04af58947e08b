/// \file tests/common/thrown.h
/// The message of an expected exception, for tests that check what an error says and not only
/// that it is thrown (EXPECT_THROW).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace hetsgd::test {

/// The message of the `E` that `run()` throws; "" and a test failure saying `returned` when it
/// returns instead (any other exception propagates and fails the test).
template <class E, class F>
std::string thrown_message(F&& run, const std::string& returned) {
  try {
    run();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << returned;
  return "";
}

}  // namespace hetsgd::test
