/// \file datasets/load.h
/// One entry point that reads any supported dataset file.
#pragma once

#include <string>

#include "core/dataset.h"

namespace hetsgd::datasets {

/// The formats load_dataset recognises.
enum class DataFormat { kCache, kXc, kLibsvm };

/// Name of a format: "cache", "xc", "libsvm".
const char* format_name(DataFormat format);

/// Detects the format of `path` from its content: the cache magic means kCache; a first line
/// of exactly three non-negative integers means kXc; anything else kLibsvm. Throws IoError if
/// the file cannot be opened.
DataFormat detect_format(const std::string& path);

/// Reads `path` in the format detect_format() finds (LIBSVM with 1-based features and inferred
/// sizes). Throws IoError as the chosen reader does.
Dataset load_dataset(const std::string& path);

}  // namespace hetsgd::datasets
