/// \file apps/compare_report.h
/// What `hetsgd compare` prints and writes: the summary table and the curve files (CSV with a
/// header, and JSONL with one eval_to_json() record per line, the layout `--log` uses).
#pragma once

#include <ostream>
#include <string>

#include "core/engine/compare.h"
#include "core/engine/trainer.h"

namespace hetsgd::app {

/// Prints the summary table: per algorithm, time to target P@1 and its ratio to sync, final
/// P@1/3/5 and nDCG@5, best P@1, training time, samples/s and its ratio to sync, epochs,
/// per-device updates and final batch sizes; then failed runs and devices and the footnotes.
/// Fits `width` columns: a table wider than that is cut into blocks of whole columns, one
/// under the other, each starting with the algorithm; notes and footnotes wrap at words.
void print_compare_table(std::ostream& os, const CompareResult& result, int width);
/// print_compare_table() at the terminal's width (terminal_columns(), apps/progress_line.h).
void print_compare_table(std::ostream& os, const CompareResult& result);

/// The header of write_curves_csv's files.
std::string curves_csv_header();
/// One CSV line (no newline) for `record` of algorithm `algo`, the fields of the header in
/// order; device_updates and device_batch as `a;b;c`.
std::string curve_csv_line(const std::string& algo, const EvalRecord& record);
/// Writes every evaluation of every successful run (CSV with header). Throws IoError.
void write_curves_csv(const std::string& path, const CompareResult& result);
/// Same, one JSON object per line: eval_to_json() plus "algo". Throws IoError.
void write_curves_jsonl(const std::string& path, const CompareResult& result);

}  // namespace hetsgd::app
