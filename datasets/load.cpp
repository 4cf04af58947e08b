#include "datasets/load.h"

#include <cstdint>
#include <cstring>

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

const char* format_name(DataFormat format) {
  switch (format) {
    case DataFormat::kCache:
      return "cache";
    case DataFormat::kXc:
      return "xc";
    case DataFormat::kLibsvm:
      return "libsvm";
  }
  return "unknown";
}

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

Dataset load_dataset(const std::string& path, const ShapeHint& hint) {
  const MappedFile file(path);
  switch (detect_format_of(file.view(), path)) {
    case DataFormat::kCache:
      return parse_cache(file.view(), path);
    case DataFormat::kXc:
      return parse_xc(file.view(), path);
    case DataFormat::kLibsvm:
      break;
  }
  try {
    return parse_libsvm(file.view(), path, hint.num_features, hint.num_labels);
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) +
                  " (read as LIBSVM: the file has no XC header and no cache magic)");
  }
}

}  // namespace hetsgd::datasets
