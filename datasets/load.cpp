#include "datasets/load.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/file_io.h"
#include "datasets/binary_cache.h"
#include "datasets/libsvm_format.h"
#include "datasets/sparse_text.h"
#include "datasets/xc_format.h"

namespace hetsgd::datasets {
namespace {

// Magics of the other hetsgd binary files, so that a model or checkpoint given as data is
// named for what it is.
constexpr std::string_view kModelMagic = "HETSGDMD";
constexpr std::string_view kCheckpointMagic = "HSGDCKPT";

// An XC header is a line of integers: a line with only digits, signs and blanks is taken as
// one (and checked by read_xc), since no LIBSVM data line looks like that unless it has a
// label and no features, which a header-less file cannot start with and still be useful.
bool looks_like_xc_header(std::string_view line) {
  bool digit = false;
  for (char c : line) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != ' ' && c != '\t' && c != '-' && c != '+') {
      return false;
    }
  }
  return digit;
}

// Line (1-based) of the first feature token with id 0 ("0:" at a token start), or 0.
index_t first_zero_feature_line(std::string_view text) {
  index_t line = 1;
  bool token_start = true;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      token_start = true;
      continue;
    }
    if (token_start && c == '0' && text[i + 1] == ':') return line;
    token_start = c == ' ' || c == '\t';
  }
  return 0;
}

}  // namespace

}  // namespace hetsgd::datasets

namespace hetsgd {
template <>
const NameTable<datasets::DataFormat>& name_table<datasets::DataFormat>() {
  using datasets::DataFormat;
  static const NameTable<DataFormat> t = {
      {"xc", DataFormat::kXc}, {"libsvm", DataFormat::kLibsvm}, {"cache", DataFormat::kCache}};
  return t;
}
}  // namespace hetsgd

namespace hetsgd::datasets {

const char* format_name(DataFormat format) { return enum_name(format); }

DataFormat detect_format_of(std::string_view text, const std::string& name) {
  const std::string_view head = text.substr(0, 8);
  if (head == std::string_view(kCacheMagic, 8)) return DataFormat::kCache;
  if (head == kModelMagic) {
    throw IoError(name + ": this is a hetsgd model file, not a dataset (pass it as -m/--model)");
  }
  if (head == kCheckpointMagic) {
    throw IoError(name + ": this is a hetsgd checkpoint, not a dataset (pass it as --resume)");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw IoError(name +
                  ":1: empty file (expected an XC header 'num_points num_features "
                  "num_labels', LIBSVM lines or a hetsgd cache)");
  }
  const std::string_view probe = text.substr(0, 1 << 16);
  if (probe.find('\0') != std::string_view::npos) {
    throw IoError(name + ": binary content (a NUL byte in the first " +
                  std::to_string(probe.size()) +
                  " bytes) and no hetsgd cache magic 'HETSGDDS': not a dataset this build reads");
  }
  const std::string_view first = first_line_of(text);
  if (looks_like_xc_header(first)) return DataFormat::kXc;
  if (const index_t line = first_zero_feature_line(text); line > 0) {
    throw IoError(name + ":" + std::to_string(line) + ": no XC header (first line '" +
                  excerpt(first, 60) +
                  "' is not 'num_points num_features num_labels'), and feature id 0 rules out "
                  "1-based LIBSVM: an XC file without its header? Add the header line");
  }
  return DataFormat::kLibsvm;
}

DataFormat detect_format(const std::string& path) {
  const MappedFile file(path);  // refuses a missing or non-regular file by name
  return detect_format_of(file.view(), path);
}

DataFormat parse_format(const std::string& name) { return parse_enum<DataFormat>(name, "format"); }

namespace {

void tell(const FormatChoice& c, const std::string& message, bool guessed) {
  if (c.notice) {
    c.notice(message, guessed);
  } else if (guessed) {
    std::cerr << "hetsgd: " << message << '\n';
  }
}

Dataset libsvm_of(std::string_view text, const std::string& path, const ShapeHint& hint,
                  const std::string& why) {
  try {
    return parse_libsvm(text, path, hint.num_features, hint.num_labels);
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + " (read as LIBSVM: " + why + ")");
  }
}

// XC data lines without their header line: 0-based ids, the shape from the hint or inferred.
Dataset xc_lines_of(std::string_view text, const std::string& path, const ShapeHint& hint) {
  check_text_memory(text.size(), path);
  SparseTextOptions o;
  o.num_features = hint.num_features > 0 ? hint.num_features : -1;
  o.num_labels = hint.num_labels > 0 ? hint.num_labels : -1;
  o.feature_base = 0;
  return parse_sparse_lines(text, path, 1, o);
}

// Highest 1-based feature id of a LIBSVM-read set (0 when it has no feature).
index_t highest_libsvm_feature(const Dataset& d) {
  if (d.x_indices.empty()) return 0;
  return static_cast<index_t>(*std::max_element(d.x_indices.begin(), d.x_indices.end())) + 1;
}

Dataset read_forced(std::string_view text, const std::string& path, const ShapeHint& hint,
                    const FormatChoice& c, DataFormat* chosen) {
  *chosen = *c.forced;
  switch (*c.forced) {
    case DataFormat::kCache:
      tell(c, path + ": read as a hetsgd cache (--format=cache)", false);
      return parse_cache(text, path);
    case DataFormat::kXc:
      if (looks_like_xc_header(first_line_of(text))) {
        tell(c, path + ": read as XC (--format=xc)", false);
        return parse_xc(text, path);
      }
      tell(c, path + ": read as XC lines without a header line, 0-based feature ids (--format=xc)",
           false);
      return xc_lines_of(text, path, hint);
    case DataFormat::kLibsvm:
      break;
  }
  tell(c, path + ": read as LIBSVM, 1-based feature ids (--format=libsvm)", false);
  return libsvm_of(text, path, hint, "as --format=libsvm asks");
}

}  // namespace

Dataset load_dataset(const std::string& path, const ShapeHint& hint, const FormatChoice& c,
                     DataFormat* chosen) {
  DataFormat scratch = DataFormat::kLibsvm;
  if (chosen == nullptr) chosen = &scratch;
  const MappedFile file(path);
  const std::string_view text = file.view();
  // A cache's magic is proof whatever --format says (it applies to the text files of a run).
  const bool cache = text.substr(0, 8) == std::string_view(kCacheMagic, 8);
  if (c.forced && !cache) return read_forced(text, path, hint, c, chosen);
  *chosen = detect_format_of(text, path);
  switch (*chosen) {
    case DataFormat::kCache:
      tell(c, path + ": hetsgd cache", false);
      return parse_cache(text, path);
    case DataFormat::kXc:
      tell(c, path + ": XC format (header '" + excerpt(first_line_of(text), 40) + "')", false);
      return parse_xc(text, path);
    case DataFormat::kLibsvm:
      break;
  }
  // No header: LIBSVM by its syntax, which XC lines that lost their header share. Only the
  // context can tell them apart.
  Dataset d = libsvm_of(text, path, hint, "the file has no XC header and no cache magic");
  const index_t top = highest_libsvm_feature(d);
  if (hint.num_features > 0 && top == hint.num_features) {
    tell(c,
         path + ": no XC header: LIBSVM (its feature id " + std::to_string(top) +
             " fits only 1-based ids)",
         false);
  } else if (c.companion == DataFormat::kLibsvm) {
    tell(c, path + ": no XC header: LIBSVM like the training data (1-based feature ids)", false);
  } else if (hint.num_features > 0) {
    throw IoError(path + ": ambiguous format: no XC header, and its feature ids (highest " +
                  std::to_string(top) + ") fit both LIBSVM (1-based) and XC lines without the " +
                  "header (0-based) for " + std::to_string(hint.num_features) +
                  " features; pass --format=libsvm or --format=xc, or add the XC header line "
                  "'num_points num_features num_labels'");
  } else {
    tell(c,
         path +
             ": no XC header: read as LIBSVM (1-based feature ids); if it is XC text "
             "without its header line, pass --format=xc",
         true);
  }
  return d;
}

}  // namespace hetsgd::datasets
