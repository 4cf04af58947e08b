#include "datasets/xc_format.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/sparse_text.h"

namespace hetsgd::datasets {
namespace {

constexpr const char* kHeaderForm = "'num_points num_features num_labels'";

// Parses the header line into {points, features, labels}; throws IoError at line 1.
std::array<index_t, 3> parse_header(std::string_view line, const std::string& name) {
  std::array<index_t, 3> v{};
  const char* p = line.data();
  const char* end = p + line.size();
  const auto bad = [&](const std::string& why) {
    throw IoError(name + ":1: malformed XC header '" + excerpt(line, 60) + "': " + why);
  };
  for (int i = 0; i < 3; ++i) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    std::int64_t x = 0;
    const auto r = std::from_chars(p, end, x);
    if (r.ec == std::errc::result_out_of_range) {
      bad("count '" + excerpt({p, static_cast<std::size_t>(r.ptr - p)}) + "' exceeds 2^63");
    }
    if (r.ec != std::errc() || (r.ptr != end && *r.ptr != ' ' && *r.ptr != '\t')) {
      bad(std::string("expected ") + kHeaderForm);
    }
    if (x < 0) bad("negative count " + std::to_string(x));
    v[i] = x;
    p = r.ptr;
  }
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  if (p != end) bad(std::string("expected exactly 3 integers ") + kHeaderForm);
  // Ids are col_t, so the id spaces must fit in 32 bits.
  constexpr index_t kMaxIds = index_t{1} << 31;
  if (v[1] > kMaxIds) bad("num_features " + std::to_string(v[1]) + " > 2^31");
  if (v[2] > kMaxIds) bad("num_labels " + std::to_string(v[2]) + " > 2^31");
  return v;
}

// Appends the text of rows [begin, end) to `out`.
void format_rows(const Dataset& d, index_t begin, index_t end, std::string* out) {
  char buf[64];
  for (index_t r = begin; r < end; ++r) {
    const std::size_t line_start = out->size();
    for (index_t k = d.y_indptr[r]; k < d.y_indptr[r + 1]; ++k) {
      if (k > d.y_indptr[r]) out->push_back(',');
      const auto res = std::to_chars(buf, buf + sizeof(buf), d.y_indices[k]);
      out->append(buf, res.ptr);
    }
    for (index_t k = d.x_indptr[r]; k < d.x_indptr[r + 1]; ++k) {
      out->push_back(' ');
      auto res = std::to_chars(buf, buf + sizeof(buf), d.x_indices[k]);
      *res.ptr++ = ':';
      // Shortest representation that parses back to the same float.
      res = std::to_chars(res.ptr, buf + sizeof(buf), d.x_values[k]);
      out->append(buf, res.ptr);
    }
    // An empty line would be dropped at the end of a file; a blank marks an empty point.
    if (out->size() == line_start) out->push_back(' ');
    out->push_back('\n');
  }
}

std::string header_of(const Dataset& d) {
  return std::to_string(d.rows()) + " " + std::to_string(d.num_features) + " " +
         std::to_string(d.num_labels) + "\n";
}

}  // namespace

Dataset parse_xc(std::string_view text, const std::string& name, const TextReadOptions& options) {
  std::size_t first = 0;
  while (first < text.size() && (text[first] == ' ' || text[first] == '\t' || text[first] == '\n' ||
                                 text[first] == '\r')) {
    ++first;
  }
  if (first == text.size()) {
    throw IoError(name + ":1: empty file (expected header " + kHeaderForm + ")");
  }
  const std::string_view header = first_line_of(text);
  const auto shape = parse_header(header, name);
  const std::size_t newline = text.find('\n');
  const std::size_t body = newline == std::string_view::npos ? text.size() : newline + 1;
  check_text_memory(text.size(), name);
  SparseTextOptions sparse;
  sparse.num_features = shape[1];
  sparse.num_labels = shape[2];
  sparse.feature_base = 0;
  sparse.chunk_bytes = options.chunk_bytes;
  Dataset d = parse_sparse_lines(text.substr(body), name, /*first_line=*/2, sparse);
  if (d.rows() != shape[0]) {
    if (d.rows() > shape[0]) {
      throw IoError(name + ":" + std::to_string(shape[0] + 2) + ": data line " +
                    std::to_string(shape[0] + 1) + " exceeds num_points " +
                    std::to_string(shape[0]) + " declared in the header");
    }
    throw IoError(name + ":" + std::to_string(d.rows() + 2) + ": file ends after " +
                  std::to_string(d.rows()) + " data lines < num_points " +
                  std::to_string(shape[0]) + " declared in the header");
  }
  return d;
}

Dataset read_xc(const std::string& path, const TextReadOptions& options) {
  const MappedFile file(path);
  return parse_xc(file.view(), path, options);
}

std::string format_xc(const Dataset& data) {
  data.validate("format_xc");
  std::string out = header_of(data);
  format_rows(data, 0, data.rows(), &out);
  return out;
}

void write_xc(const Dataset& data, const std::string& path) {
  data.validate("write_xc " + path);
  write_file_atomic(path, [&](const ByteSink& sink) {
    const std::string header = header_of(data);
    sink(header.data(), header.size());
    // Format blocks of rows in parallel, write them in order; memory stays bounded.
    constexpr index_t kRowsPerBlock = 4096;
    constexpr index_t kBlocksPerRound = 64;
    std::vector<std::string> blocks(kBlocksPerRound);
    for (index_t round = 0; round < data.rows(); round += kRowsPerBlock * kBlocksPerRound) {
      tbb::parallel_for(index_t{0}, kBlocksPerRound, [&](index_t b) {
        blocks[b].clear();
        const index_t begin = std::min(data.rows(), round + b * kRowsPerBlock);
        const index_t end = std::min(data.rows(), begin + kRowsPerBlock);
        format_rows(data, begin, end, &blocks[b]);
      });
      for (const std::string& s : blocks) sink(s.data(), s.size());
    }
  });
}

}  // namespace hetsgd::datasets
