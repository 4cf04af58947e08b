/// \file apps/output_path.h
/// Output paths checked before any work starts, so that a typo in `-o` or `--checkpoint`
/// fails in a second, not after an hour of training.
#pragma once

#include <string>

namespace hetsgd::app {

/// Throws IoError naming `what` and `path` when the file cannot be written: its folder is
/// missing, not a folder or not writable, or the path exists and is not a regular file (a
/// device node, FIFO or folder is never replaced). "" is accepted (no output).
void check_output_path(const std::string& path, const char* what);

}  // namespace hetsgd::app
