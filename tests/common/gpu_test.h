/// \file tests/common/gpu_test.h
/// GPU tests compile everywhere and skip without a GPU; HETSGD_REQUIRE_GPU=1 turns a skip into
/// a failure so that a GPU lane cannot pass with nothing run.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/registry.h"

namespace hetsgd::test {

/// True when HETSGD_REQUIRE_GPU=1.
inline bool gpu_required() {
  const char* req = std::getenv("HETSGD_REQUIRE_GPU");
  return req != nullptr && std::string(req) == "1";
}

/// Call only from SetUp(): skips, or fails when HETSGD_REQUIRE_GPU=1, if < n CUDA devices exist.
inline void require_cuda_devices(int n) {
  const int have = cuda_device_count();
  if (have >= n) return;
  if (gpu_required()) {
    FAIL() << "HETSGD_REQUIRE_GPU=1 but found " << have << " CUDA device(s), need " << n;
  }
  GTEST_SKIP() << "needs " << n << " CUDA device(s), found " << have;
}

}  // namespace hetsgd::test
