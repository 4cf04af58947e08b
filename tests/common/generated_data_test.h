/// \file tests/common/generated_data_test.h
/// Fixture for command-line tests that train on a small generated data set.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/common/cli_run.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::test {

/// A ScratchTest whose SetUp generates a small bibtex-shaped pair in XC format in the folder
/// (tmp("d_train.txt"), tmp("d_test.txt")).
class GeneratedDataTest : public ScratchTest {
 protected:
  using ScratchTest::ScratchTest;
  void SetUp() override {
    ScratchTest::SetUp();
    const CliRun g = run_cli("data gen --preset=bibtex --scale=0.05 -o " + tmp("d"));
    ASSERT_EQ(g.code, 0) << g.out;
  }
  /// `hetsgd train` on the generated pair with `flags`.
  CliRun train_on_data(const std::string& flags) const {
    return run_cli("train --train=" + tmp("d_train.txt") + " --test=" + tmp("d_test.txt") + " " +
                   flags);
  }
};

}  // namespace hetsgd::test
