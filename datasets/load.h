/// \file datasets/load.h
/// One entry point that reads any supported dataset file, saying which format it detected.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/dataset.h"
#include "core/enum_names.h"
#include "core/types.h"

namespace hetsgd::datasets {

/// The formats load_dataset recognises.
enum class DataFormat { kCache, kXc, kLibsvm };

}  // namespace hetsgd::datasets

namespace hetsgd {
/// Their names (core/enum_names.h): "xc", "libsvm", "cache".
template <>
const NameTable<datasets::DataFormat>& name_table<datasets::DataFormat>();
}  // namespace hetsgd

namespace hetsgd::datasets {

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

/// Parses a `--format` value: "xc", "libsvm" or "cache" (InvalidArgument listing them).
DataFormat parse_format(const std::string& name);

/// How load_dataset chooses the format of a file, and whom it tells.
struct FormatChoice {
  /// `--format`: read the file as this, no guess. kXc also reads XC lines without their
  /// header (0-based ids, the shape from the hint or inferred).
  std::optional<DataFormat> forced;
  /// Format of the data this file goes with (the training set of a test or validation file):
  /// a header-less file beside a LIBSVM training set is LIBSVM like it.
  std::optional<DataFormat> companion;
  /// Told which format was chosen and why, once per file; `guessed` is true when the content
  /// does not prove it (a file without XC header read as LIBSVM). Null: guesses go to stderr.
  std::function<void(const std::string& message, bool guessed)> notice;
};

/// Reads `path` in the format `choice` forces, else the one detect_format() finds, and says
/// which through `choice.notice`. LIBSVM files take their id spaces from `hint` where it is
/// non-zero (a test set takes the training set's or the model's label count, so a partial or
/// unlabeled test set keeps the right width) and infer them otherwise; their features are
/// 1-based. XC files and caches carry their own shape (the caller checks it against the hint).
///
/// A file without XC header (and no feature id 0) is read as LIBSVM when nothing contradicts
/// it: it is a training file, its training set is LIBSVM, or its highest feature id equals
/// hint.num_features (only 1-based ids fit). When the feature space is fixed elsewhere (a
/// model, an XC or cache training set) and both readings fit, the file is ambiguous: IoError
/// asking for --format=libsvm or --format=xc. A LIBSVM parse error says the file was read as
/// LIBSVM. Throws IoError as the chosen reader does.
/// `chosen`, when given, receives the format read.
Dataset load_dataset(const std::string& path, const ShapeHint& hint = {},
                     const FormatChoice& choice = {}, DataFormat* chosen = nullptr);

}  // namespace hetsgd::datasets
