#include "datasets/sparse_text.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"

namespace hetsgd::datasets {
namespace {

// Ids are stored as col_t, so any id must be < 2^31 even when the bound is inferred.
constexpr index_t kIdLimit = index_t{std::numeric_limits<col_t>::max()} + 1;

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

// Result of parse_int: mirrors std::from_chars (ptr, ec) but stays inline in the hot loop,
// where the out-of-line std::from_chars<long> call was a quarter of the parse time.
struct IntResult {
  const char* ptr;
  std::errc ec;
};

// Parses `-?[0-9]+` from [p, end), decimal even with leading zeros ("007" is 7). More than 18
// significant digits is result_out_of_range (no id or count in this project comes close); no
// digit is invalid_argument with ptr == p.
inline IntResult parse_int(const char* p, const char* end, std::int64_t* value) {
  const char* q = p;
  const bool negative = q < end && *q == '-';
  if (negative) ++q;
  const char* digits = q;
  while (q < end && *q == '0') ++q;
  const char* significant = q;
  std::uint64_t v = 0;
  while (q < end && static_cast<unsigned>(*q - '0') < 10u) {
    v = v * 10u + static_cast<unsigned>(*q - '0');
    ++q;
  }
  if (q == digits) return {p, std::errc::invalid_argument};
  if (q - significant > 18) return {q, std::errc::result_out_of_range};
  *value = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return {q, std::errc()};
}

// An error found inside a chunk; `line` is relative to the chunk until the chunks are merged.
struct LineError {
  index_t line;
  std::string message;
};

// Everything one chunk contributes: local CSR arrays whose offsets start at 0.
struct ChunkResult {
  std::vector<index_t> x_indptr{0};
  std::vector<col_t> x_indices;
  std::vector<float> x_values;
  std::vector<index_t> y_indptr{0};
  std::vector<col_t> y_indices;
  index_t max_feature = -1;
  index_t max_label = -1;
  bool failed = false;
  LineError error;
  index_t lines() const { return static_cast<index_t>(x_indptr.size()) - 1; }
};

const char* token_end(const char* p, const char* end) {
  while (p < end && !is_blank(*p)) ++p;
  return p;
}

// Parses the lines of one chunk. Errors unwind to parse_chunk via LineError.
class ChunkParser {
 public:
  ChunkParser(const SparseTextOptions& options, ChunkResult* out)
      : out_(out),
        feature_bound_(options.num_features >= 0 ? options.num_features : kIdLimit),
        label_bound_(options.num_labels >= 0 ? options.num_labels : kIdLimit),
        feature_bound_inferred_(options.num_features < 0),
        label_bound_inferred_(options.num_labels < 0),
        base_(options.feature_base) {}

  void parse_line(const char* p, const char* end, index_t line) {
    line_ = line;
    if (end > p && end[-1] == '\r') --end;  // CRLF files
    if (p < end && !is_blank(*p)) {
      const char* first_end = token_end(p, end);
      // A first token with ':' is a feature: the point has no labels (LIBSVM without labels).
      if (std::memchr(p, ':', static_cast<std::size_t>(first_end - p)) == nullptr) {
        parse_labels(p, first_end);
        p = first_end;
      }
    }
    parse_features(p, end);
    out_->x_indptr.push_back(static_cast<index_t>(out_->x_indices.size()));
    out_->y_indptr.push_back(static_cast<index_t>(out_->y_indices.size()));
  }

 private:
  [[noreturn]] void fail(std::string message) const { throw LineError{line_, std::move(message)}; }

  std::string bound_text(const char* what, index_t bound, bool inferred) const {
    if (inferred) return std::string("2^31 (") + what + " ids must fit in 32 bits)";
    return std::string(what) + " " + std::to_string(bound);
  }

  void parse_labels(const char* p, const char* end) {
    const std::size_t row_begin = out_->y_indices.size();
    bool sorted = true;
    while (true) {
      std::int64_t id = 0;
      const IntResult r = parse_int(p, end, &id);
      const char* tok = p;
      const char* tok_stop = r.ptr;
      if (r.ec == std::errc::invalid_argument || (tok_stop != end && *tok_stop != ',')) {
        const char* e = tok;
        while (e < end && *e != ',') ++e;
        fail("bad label id '" + excerpt({tok, static_cast<std::size_t>(e - tok)}) +
             "' (expected a non-negative integer)");
      }
      // A sign is checked first: "-0" is not label 0, and a long negative id is negative.
      if (*tok == '-') {
        fail("negative label id " + excerpt({tok, static_cast<std::size_t>(tok_stop - tok)}) +
             " < 0 (label ids are 0-based)");
      }
      if (r.ec == std::errc::result_out_of_range || id >= label_bound_) {
        fail("label id " + excerpt({tok, static_cast<std::size_t>(tok_stop - tok)}) +
             " >= " + bound_text("num_labels", label_bound_, label_bound_inferred_));
      }
      if (out_->y_indices.size() > row_begin && out_->y_indices.back() >= id) sorted = false;
      out_->y_indices.push_back(static_cast<col_t>(id));
      out_->max_label = std::max<index_t>(out_->max_label, id);
      if (tok_stop == end) break;
      p = tok_stop + 1;  // skip ','
    }
    if (!sorted) {
      // Labels are a set: order them and drop repeats so metrics never count a label twice.
      auto first = out_->y_indices.begin() + static_cast<std::ptrdiff_t>(row_begin);
      std::sort(first, out_->y_indices.end());
      out_->y_indices.erase(std::unique(first, out_->y_indices.end()), out_->y_indices.end());
    }
  }

  // Fast path for the common integer counts ("1", "3"); the general path is from_chars.
  const char* parse_value(const char* p, const char* end, index_t feature, float* value) const {
    const char* q = p;
    std::uint32_t acc = 0;
    int digits = 0;
    while (q < end && digits < 8 && static_cast<unsigned>(*q - '0') < 10u) {
      acc = acc * 10u + static_cast<unsigned>(*q - '0');
      ++q;
      ++digits;
    }
    if (digits > 0 && digits < 8 && (q == end || is_blank(*q))) {
      *value = static_cast<float>(acc);  // exact: < 2^24
      return q;
    }
    const char* start = p;
    // from_chars rejects a leading plus; one is skipped, but only before a digit or a point:
    // "+-1" is not a number.
    if (start < end && *start == '+' && start + 1 < end && *(start + 1) != '-' &&
        *(start + 1) != '+') {
      ++start;
    }
    const auto r = std::from_chars(start, end, *value);
    const char* tok_stop = token_end(p, end);
    if (r.ec == std::errc::invalid_argument || (r.ptr != end && !is_blank(*r.ptr))) {
      fail("bad value '" + excerpt({p, static_cast<std::size_t>(tok_stop - p)}) + "' for feature " +
           std::to_string(feature) + " (expected a float)");
    }
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow is harmless (the value is tiny); overflow is not representable.
      const double d = std::strtod(std::string(start, r.ptr).c_str(), nullptr);
      if (!std::isfinite(d) || std::fabs(d) >= static_cast<double>(FLT_MAX)) {
        fail("value " + excerpt({p, static_cast<std::size_t>(tok_stop - p)}) + " of feature " +
             std::to_string(feature) + " exceeds the float range (max 3.40282e+38)");
      }
      *value = static_cast<float>(d);
    }
    if (!std::isfinite(*value)) {
      fail("value " + excerpt({p, static_cast<std::size_t>(tok_stop - p)}) + " of feature " +
           std::to_string(feature) + " is not finite");
    }
    return r.ptr;
  }

  void parse_features(const char* p, const char* end) {
    const std::size_t row_begin = out_->x_indices.size();
    bool sorted = true;
    while (true) {
      while (p < end && is_blank(*p)) ++p;
      if (p == end) break;
      std::int64_t raw = 0;
      const IntResult r = parse_int(p, end, &raw);
      if (r.ec == std::errc::invalid_argument || r.ptr == end || *r.ptr != ':') {
        const char* e = token_end(p, end);
        const std::string tok = excerpt({p, static_cast<std::size_t>(e - p)});
        if (std::memchr(p, ':', static_cast<std::size_t>(e - p)) == nullptr) {
          fail("expected 'id:value', got '" + tok + "'");
        }
        fail("bad feature id in '" + tok + "' (expected a non-negative integer)");
      }
      const std::string_view id_text(p, static_cast<std::size_t>(r.ptr - p));
      const std::int64_t id = raw - base_;
      if (*p == '-') {
        fail("negative feature id " + excerpt(id_text) + " < " + std::to_string(base_) +
             " (feature ids are " + std::to_string(base_) + "-based)");
      }
      if (r.ec == std::errc::result_out_of_range || id >= feature_bound_) {
        std::string msg = "feature id " + excerpt(id_text) + " >= ";
        if (base_ != 0 && !feature_bound_inferred_) {
          msg += "num_features + " + std::to_string(base_) + " = " +
                 std::to_string(feature_bound_ + base_) + " (ids are " + std::to_string(base_) +
                 "-based)";
        } else {
          msg += bound_text("num_features", feature_bound_, feature_bound_inferred_);
        }
        fail(msg);
      }
      if (id < 0) {
        fail("feature id " + std::to_string(raw) + " < " + std::to_string(base_) +
             " (feature ids are " + std::to_string(base_) + "-based)");
      }
      float value = 0.0f;
      p = parse_value(r.ptr + 1, end, raw, &value);
      if (out_->x_indices.size() > row_begin) {
        const col_t prev = out_->x_indices.back();
        if (prev == id) fail("duplicate feature id " + std::to_string(raw));
        if (prev > id) sorted = false;
      }
      out_->x_indices.push_back(static_cast<col_t>(id));
      out_->x_values.push_back(value);
      out_->max_feature = std::max<index_t>(out_->max_feature, id);
    }
    if (!sorted) sort_row(row_begin);
  }

  // Rows must be ascending by feature id (core/dataset.h); most files already are.
  void sort_row(std::size_t row_begin) {
    const std::size_t n = out_->x_indices.size() - row_begin;
    std::vector<std::pair<col_t, float>> pairs(n);
    for (std::size_t i = 0; i < n; ++i) {
      pairs[i] = {out_->x_indices[row_begin + i], out_->x_values[row_begin + i]};
    }
    std::sort(pairs.begin(), pairs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0 && pairs[i].first == pairs[i - 1].first) {
        fail("duplicate feature id " + std::to_string(pairs[i].first + base_));
      }
      out_->x_indices[row_begin + i] = pairs[i].first;
      out_->x_values[row_begin + i] = pairs[i].second;
    }
  }

  ChunkResult* out_;
  index_t feature_bound_;
  index_t label_bound_;
  bool feature_bound_inferred_;
  bool label_bound_inferred_;
  int base_;
  index_t line_ = 0;
};

void parse_chunk(const char* begin, const char* end, const SparseTextOptions& options,
                 ChunkResult* out) {
  // Rough reservation: ~8 text bytes per stored feature keeps reallocations rare.
  const auto bytes = static_cast<std::size_t>(end - begin);
  out->x_indices.reserve(bytes / 8);
  out->x_values.reserve(bytes / 8);
  ChunkParser parser(options, out);
  index_t line = 0;
  const char* p = begin;
  try {
    while (p < end) {
      const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
      const char* line_end = nl != nullptr ? static_cast<const char*>(nl) : end;
      parser.parse_line(p, line_end, line);
      ++line;
      p = line_end + 1;
    }
  } catch (LineError& e) {
    out->failed = true;
    out->error = std::move(e);
  }
}

}  // namespace

void check_text_memory(std::size_t text_bytes, const std::string& file_name) {
  check_memory(saturating_mul(text_bytes, 2),
               "parsing '" + file_name + "' (" + std::to_string(text_bytes) + " bytes of text)");
}

std::string excerpt(std::string_view token, std::size_t max_chars) {
  if (token.size() <= max_chars) return std::string(token);
  return std::string(token.substr(0, max_chars)) + "...";
}

std::string_view first_line_of(std::string_view text) {
  const std::size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

Dataset parse_sparse_lines(std::string_view text, const std::string& file_name, index_t first_line,
                           const SparseTextOptions& options) {
  std::size_t n = text.size();
  while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) --n;  // trailing blank lines
  const char* base = text.data();

  // Line-aligned chunk boundaries: a function of the text and chunk_bytes only.
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  const std::size_t step = std::max<std::size_t>(options.chunk_bytes, 1);
  for (std::size_t pos = 0; pos < n;) {
    std::size_t stop = n;
    if (n - pos > step) {
      const void* nl = std::memchr(base + pos + step, '\n', n - pos - step);
      stop = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - base) + 1 : n;
    }
    ranges.emplace_back(pos, stop);
    pos = stop;
  }

  std::vector<ChunkResult> chunks(ranges.size());
  tbb::parallel_for(std::size_t{0}, ranges.size(), [&](std::size_t c) {
    parse_chunk(base + ranges[c].first, base + ranges[c].second, options, &chunks[c]);
  });

  // Report the first error in file order; chunks before it are complete, so their line
  // counts give its absolute line number.
  const std::size_t num_chunks = chunks.size();
  std::vector<index_t> row_off(num_chunks + 1, 0), x_off(num_chunks + 1, 0),
      y_off(num_chunks + 1, 0);
  index_t max_feature = -1, max_label = -1;
  for (std::size_t c = 0; c < num_chunks; ++c) {
    const ChunkResult& ch = chunks[c];
    if (ch.failed) {
      throw IoError(file_name + ":" + std::to_string(first_line + row_off[c] + ch.error.line) +
                    ": " + ch.error.message);
    }
    row_off[c + 1] = row_off[c] + ch.lines();
    x_off[c + 1] = x_off[c] + static_cast<index_t>(ch.x_indices.size());
    y_off[c + 1] = y_off[c] + static_cast<index_t>(ch.y_indices.size());
    max_feature = std::max(max_feature, ch.max_feature);
    max_label = std::max(max_label, ch.max_label);
  }

  Dataset out;
  out.num_features = options.num_features >= 0 ? options.num_features : max_feature + 1;
  out.num_labels = options.num_labels >= 0 ? options.num_labels : max_label + 1;
  const index_t rows = row_off[num_chunks];
  out.x_indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  out.y_indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  out.x_indices.resize(static_cast<std::size_t>(x_off[num_chunks]));
  out.x_values.resize(static_cast<std::size_t>(x_off[num_chunks]));
  out.y_indices.resize(static_cast<std::size_t>(y_off[num_chunks]));
  tbb::parallel_for(std::size_t{0}, num_chunks, [&](std::size_t c) {
    ChunkResult& ch = chunks[c];
    const index_t r0 = row_off[c];
    for (index_t r = 1; r <= ch.lines(); ++r) {
      out.x_indptr[r0 + r] = x_off[c] + ch.x_indptr[r];
      out.y_indptr[r0 + r] = y_off[c] + ch.y_indptr[r];
    }
    std::copy(ch.x_indices.begin(), ch.x_indices.end(), out.x_indices.begin() + x_off[c]);
    std::copy(ch.x_values.begin(), ch.x_values.end(), out.x_values.begin() + x_off[c]);
    std::copy(ch.y_indices.begin(), ch.y_indices.end(), out.y_indices.begin() + y_off[c]);
    ch = ChunkResult();  // free chunk memory early
  });
  return out;
}

}  // namespace hetsgd::datasets
