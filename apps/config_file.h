/// \file apps/config_file.h
/// Strict checking of `--config=FILE` before CLI11 reads it. CLI11 ignores what it does not
/// know; a config file that silently drops a misspelt `[trian]` section trains on the default
/// data instead of the file's. This pass refuses, naming file:line, anything that would not
/// take effect: a malformed line, a section that is not a subcommand, a key that is not an
/// option of its section's subcommand. It also refuses a non-regular file and one over
/// kMaxConfigBytes.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace hetsgd::app {

/// Largest config file accepted (a real one is a few hundred bytes).
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;

/// The FILE of `--config=FILE` / `--config FILE` in argv, or "" when absent.
std::string config_path_from_args(int argc, char** argv);

/// Checks `path` against the options registered on `app` (see the file comment). Format:
/// `# comment` / `; comment` lines, `[sub]` or `[sub.subsub]` sections, `key = value` lines
/// (key with '-' or '_'). Throws InvalidArgument "<path>:<line>: ...".
void check_config_file(const std::string& path, CLI::App& app);

}  // namespace hetsgd::app
