#include "datasets/load.h"

#include <charconv>
#include <cstdint>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/binary_cache.h"
#include "datasets/libsvm_format.h"
#include "datasets/sparse_text.h"
#include "datasets/xc_format.h"

namespace hetsgd::datasets {
namespace {

// True when `line` is exactly three blank-separated non-negative integers.
bool is_xc_header(std::string_view line) {
  const char* p = line.data();
  const char* end = p + line.size();
  for (int i = 0; i < 3; ++i) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    std::int64_t v = 0;
    const auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc() || v < 0) return false;
    if (r.ptr != end && *r.ptr != ' ' && *r.ptr != '\t') return false;
    p = r.ptr;
  }
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  return p == end;
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

DataFormat detect_format(const std::string& path) {
  const MappedFile file(path);  // throws IoError naming a missing file
  const std::string_view text = file.view();
  if (text.size() >= 8 && text.substr(0, 8) == std::string_view(kCacheMagic, 8)) {
    return DataFormat::kCache;
  }
  return is_xc_header(first_line_of(text)) ? DataFormat::kXc : DataFormat::kLibsvm;
}

Dataset load_dataset(const std::string& path) {
  switch (detect_format(path)) {
    case DataFormat::kCache:
      return load_cache(path);
    case DataFormat::kXc:
      return read_xc(path);
    case DataFormat::kLibsvm:
      break;
  }
  return read_libsvm(path);
}

}  // namespace hetsgd::datasets
