/// \file tests/common/cli_json.h
/// Reading a command's `--json` record out of its captured output (tests/common/cli_run.h).
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace hetsgd::test {

/// The JSON record among the printed lines (stderr notices may surround it); a test failure
/// and an empty object when there is none.
inline nlohmann::json record_of(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] == '{') return nlohmann::json::parse(line);
  }
  ADD_FAILURE() << "no JSON record in:\n" << out;
  return {};
}

/// P@1 + P@3 + P@5 of a metrics record: the sum the `auto` choices maximise.
inline double p135(const nlohmann::json& m) {
  return m["p1"].get<double>() + m["p3"].get<double>() + m["p5"].get<double>();
}

}  // namespace hetsgd::test
