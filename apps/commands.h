/// \file apps/commands.h
/// Each subcommand registers its options on the application and returns the function that
/// runs it after parsing (returning the process exit code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace hetsgd::app {

using Runner = std::function<int()>;

Runner add_train_command(CLI::App& app);
Runner add_eval_command(CLI::App& app);
Runner add_predict_command(CLI::App& app);
Runner add_data_command(CLI::App& app);
Runner add_devices_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_share_command(CLI::App& app);

}  // namespace hetsgd::app
