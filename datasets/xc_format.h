/// \file datasets/xc_format.h
/// Reader and writer for the Extreme Classification Repository text format.
///
/// Layout: a header line `num_points num_features num_labels`, then exactly `num_points`
/// lines `l1,l2,... f:v f:v ...` with 0-based label and feature ids. A point without labels
/// starts with a blank (` f:v ...`). Reading maps the file once and parses line-aligned chunks
/// in parallel with oneTBB (see datasets/sparse_text.h); the result does not depend on the
/// thread count.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/dataset.h"

namespace hetsgd::datasets {

/// Tuning knobs of the text readers; the defaults suit every real file.
struct TextReadOptions {
  /// Approximate bytes per parallel parsing chunk (boundaries never depend on thread count).
  std::size_t chunk_bytes = std::size_t{1} << 18;
};

/// Reads an XC-format file. The shape comes from the header; every id is checked against it.
///
/// Throws IoError naming the file and, where one exists, the 1-based line, the offending value
/// and the bound, e.g. `train.txt:812: label id 70231 >= num_labels 67000`, for: a missing
/// file, an empty file, a missing or malformed header, a data line count different from the
/// header, a negative, non-numeric or out-of-range id, a non-numeric, NaN or infinite value.
/// Runs in the caller's oneTBB arena.
Dataset read_xc(const std::string& path, const TextReadOptions& options = {});

/// Parses XC-format `text` already in memory; `name` stands for the file in error messages.
Dataset parse_xc(std::string_view text, const std::string& name,
                 const TextReadOptions& options = {});

/// Writes `data` in XC format (values in shortest round-trip form, so read_xc(write_xc(d))
/// reproduces d exactly). The file is written atomically (temporary file + rename). A row with
/// neither labels nor features is written as a single blank. Throws IoError on failure and
/// InvalidArgument if `data` does not validate.
void write_xc(const Dataset& data, const std::string& path);

/// Formats `data` as XC text (what write_xc writes), for tests and small exports.
std::string format_xc(const Dataset& data);

}  // namespace hetsgd::datasets
