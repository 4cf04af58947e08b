/// \file datasets/libsvm_format.h
/// Reader for multi-label LIBSVM text files (no header line).
///
/// Each line is `l1,l2,... f:v f:v ...`. Conventions, chosen to match the multi-label LIBSVM
/// files distributed with LIBSVM and the XC Repository:
/// - feature ids are 1-based by default (`one_based_features = true`) and stored 0-based;
/// - label ids are 0-based and stored as they are;
/// - a line that starts with a blank, or whose first token is an `id:value` pair, has no labels.
/// The reader shares the parallel chunked parser of the XC reader (datasets/sparse_text.h).
#pragma once

#include <string>
#include <string_view>

#include "core/dataset.h"
#include "core/types.h"
#include "datasets/xc_format.h"

namespace hetsgd::datasets {

/// Reads a multi-label LIBSVM file.
///
/// `num_features` / `num_labels`: the sizes of the id spaces (0-based, after the 1-based
/// feature shift); 0 infers each as max id + 1 over the file. When given, every id is checked
/// against it. Throws IoError `<file>:<line>: <what> <value> <bound>` on malformed input (see
/// read_xc for the cases) and on an empty or missing file.
Dataset read_libsvm(const std::string& path, index_t num_features = 0, index_t num_labels = 0,
                    bool one_based_features = true, const TextReadOptions& options = {});

/// Parses LIBSVM `text` already in memory; `name` stands for the file in error messages.
Dataset parse_libsvm(std::string_view text, const std::string& name, index_t num_features = 0,
                     index_t num_labels = 0, bool one_based_features = true,
                     const TextReadOptions& options = {});

}  // namespace hetsgd::datasets
