/// \file tests/common/generated_data_test.h
/// Fixture for command-line tests that train on a small generated data set.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_json.h"
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
  /// The `--json` record of `hetsgd eval` of `model` on the generated test set, on one thread
  /// as the tests train, so that it can be held to the training record's metrics; a failed
  /// eval fails the test and gives an empty object.
  nlohmann::json eval_on_data(const std::string& model) const {
    const CliRun e =
        run_cli("eval -m " + model + " -d " + tmp("d_test.txt") + " --threads=1 --json");
    EXPECT_EQ(e.code, 0) << e.out;
    return e.code == 0 ? record_of(e.out) : nlohmann::json::object();
  }
};

}  // namespace hetsgd::test
