/// \file datasets/sparse_text.h
/// The parallel parser shared by the XC Repository and LIBSVM readers.
///
/// Both formats store one point per line as `l1,l2,... f:v f:v ...`: an optional
/// comma-separated label list, then `id:value` feature pairs separated by blanks. A line that
/// starts with a blank, or whose first token contains ':', has no labels. The text is split
/// into line-aligned chunks that oneTBB parses independently into local arrays; the arrays are
/// then concatenated with prefix sums, so the result (and the first error reported) does not
/// depend on the number of threads.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/dataset.h"
#include "core/types.h"

namespace hetsgd::datasets {

/// How parse_sparse_lines interprets and bounds the ids of one file.
struct SparseTextOptions {
  /// Exclusive bound on feature ids after subtracting `feature_base`; -1 infers it as
  /// max id + 1 (and then only ids >= 2^31 are rejected).
  index_t num_features = -1;
  /// Exclusive bound on label ids; -1 infers it as max id + 1.
  index_t num_labels = -1;
  /// Value of the first feature id in the text: 0 for the XC format, 1 for LIBSVM. Ids below
  /// the base are rejected; the Dataset always stores 0-based ids.
  int feature_base = 0;
  /// Approximate bytes per parallel chunk. Chunk boundaries depend only on this value and the
  /// text, never on the thread count. Tests lower it to force many chunks on tiny inputs.
  std::size_t chunk_bytes = std::size_t{1} << 18;
};

/// Parses every line of `text` into rows of a Dataset (shape taken from `options`, or
/// inferred). `file_name` and `first_line` (1-based number of the first line of `text` in the
/// file) only serve error messages. Trailing empty lines are ignored; an empty line elsewhere is
/// a point with no labels and no features. Feature ids of a row are sorted ascending; repeated
/// labels of a row are dropped.
///
/// Throws IoError `<file>:<line>: <what> <value> <bound>` for the first malformed line in file
/// order: a non-numeric or negative id, an id at or above its bound, a value that is not a
/// finite float, a token that is not `id:value`, or a feature id repeated within a row.
/// Runs in the caller's oneTBB arena (wrap it in a `tbb::task_arena` to limit threads).
Dataset parse_sparse_lines(std::string_view text, const std::string& file_name, index_t first_line,
                           const SparseTextOptions& options);

/// Throws MemoryBudgetExceeded (core/memory_budget.h) when parsing `text_bytes` of text would
/// not fit: the parsed arrays and the per-chunk copies they are merged from take about twice
/// the text's size for typical `id:value` tokens.
void check_text_memory(std::size_t text_bytes, const std::string& file_name);

/// Text of the first line of `text` (without the line break), for format sniffing and headers.
std::string_view first_line_of(std::string_view text);

/// Shortens `token` to at most `max_chars` characters (appending "...") for error messages.
std::string excerpt(std::string_view token, std::size_t max_chars = 40);

}  // namespace hetsgd::datasets
