/// \file datasets/load.h
/// One entry point that reads any supported dataset file, saying which format it detected.
#pragma once

#include <string>
#include <string_view>

#include "core/dataset.h"
#include "core/types.h"

namespace hetsgd::datasets {

/// The formats load_dataset recognises.
enum class DataFormat { kCache, kXc, kLibsvm };

/// Name of a format: "cache", "xc", "libsvm".
const char* format_name(DataFormat format);

/// Id spaces known from elsewhere (the training set, a model) for a file that has no header
/// of its own. 0 means unknown.
struct ShapeHint {
  index_t num_features = 0;  ///< width of the feature space the data must fit
  index_t num_labels = 0;    ///< size of the label space the data must fit
};

/// Detects the format of `path` (a regular file) from its content and throws IoError saying
/// what it found when it is none of them:
/// - the cache magic "HETSGDDS" means kCache;
/// - a first line made only of integers and blanks is an XC header: kXc (a header that is not
///   exactly three non-negative integers is then reported by read_xc as a malformed XC
///   header, never read as LIBSVM);
/// - otherwise the file is LIBSVM only when it looks like LIBSVM: text (no NUL byte) whose
///   first line is `labels id:value ...` and in which no feature id is 0 (LIBSVM ids are
///   1-based; a 0 means an XC file that lost its header, refused rather than shifted);
/// - a hetsgd model or checkpoint file is named as such.
DataFormat detect_format(const std::string& path);

/// detect_format on text already in memory; `name` stands for the file in messages.
DataFormat detect_format_of(std::string_view text, const std::string& name);

/// Reads `path` in the format detect_format() finds. LIBSVM files take their id spaces from
/// `hint` where it is non-zero (a test set takes the training set's or the model's label
/// count, so a partial or unlabeled test set keeps the right width) and infer them otherwise;
/// their features are 1-based. XC files and caches carry their own shape (the caller checks
/// it against the hint). A LIBSVM parse error says the file was read as LIBSVM. Throws
/// IoError as the chosen reader does.
Dataset load_dataset(const std::string& path, const ShapeHint& hint = {});

}  // namespace hetsgd::datasets
