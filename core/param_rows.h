/// \file core/param_rows.h
/// A subset of a model's parameters named by rows, and its packed form: what a replica changed
/// since the last merge, and what a sparse merge or all-reduce moves (kernels/README.md, row
/// exchange).
///
/// The parameter buffer (param_layout.h) has up to two row-sparse parts:
///   * the input rows: W0 row f (hidden0 floats) belongs to feature f, and a step changes only
///     the rows of the features in its batch;
///   * the output rows, when the output layer is shortlisted: label j owns row j of W_out
///     (in floats; the output layer is stored by label, [L x in]) and b_out[j], and a step
///     changes only its candidates' rows.
/// Everything else (b0, the hidden layers, and a full output layer) is the dense part, which
/// every step changes.
///
/// Packed form of a ParamRows `s` that is not all(): the input rows, |input| x hidden0 floats
/// in list order; then the dense part when `s.dense` (its floats in buffer order); then, with
/// output rows, the listed labels' rows of W_out ([|output| x in], list order) followed by
/// their |output| biases. all() packs as the plain buffer. Sizes are in floats.
///
/// Functions here are pure host code; the TBB-parallel ones must not be called from inside a
/// TBB body that holds a lock.
#pragma once

#include <vector>

#include "core/param_layout.h"
#include "core/types.h"

namespace hetsgd {

/// Rows of the two row-sparse parts, plus whether the dense part is included.
struct ParamRows {
  /// Every parameter: the lists and flags below are unused. A Device that cannot tell which
  /// rows it changed reports this (the default), and exchanges then stay dense.
  bool everything = true;
  /// The dense part is included.
  bool dense = true;
  /// The output layer is row-sparse (shortlisted): `output` lists labels. When false the
  /// output layer belongs to the dense part and `output` is empty.
  bool output_rows = false;
  std::vector<col_t> input;   ///< W0 rows (feature ids), ascending, unique
  std::vector<col_t> output;  ///< output labels, ascending, unique (output_rows only)
  /// The included range of the dense part, in floats from its start (dense_end -1 = to its
  /// end). Only pieces made by split_rows() use a sub-range.
  index_t dense_begin = 0;
  index_t dense_end = -1;

  /// Every parameter.
  static ParamRows all() { return ParamRows{}; }
  /// Nothing yet (no rows, no dense part) in a model whose output layer is row-sparse when
  /// `output_rows`; grow it with unite().
  static ParamRows none(bool output_rows);
  /// Every row of both parts and the dense part, listed (a dense exchange in row form).
  static ParamRows every_row(const ParamLayout& layout, bool output_rows);
  /// True when no parameter is included.
  bool empty() const { return !everything && !dense && input.empty() && output.empty(); }
};

/// Floats in the packed form of `rows`.
index_t packed_size(const ParamLayout& layout, const ParamRows& rows);
/// packed_size / layout.total(): the share of the model an exchange of `rows` moves.
double packed_fraction(const ParamLayout& layout, const ParamRows& rows);

/// The union of `a` and `b` (sorted merges of the lists; all() when either is).
ParamRows unite(const ParamRows& a, const ParamRows& b);
/// Sorts and deduplicates the lists of `rows` in place.
void normalise(ParamRows* rows);

/// Splits `rows` (not all()) into pieces of at most about `max_floats` packed floats each (a
/// row is never split; the dense part is cut into ranges of its own), so that an exchange can
/// stream through small buffers. The pieces together are `rows`, each listed once.
std::vector<ParamRows> split_rows(const ParamLayout& layout, const ParamRows& rows,
                                  index_t max_floats);

/// Gathers the parameters `rows` of the full buffer `full` (layout.total() floats) into
/// `packed` (packed_size floats). Parallel over rows with oneTBB.
void pack_rows(const ParamLayout& layout, const ParamRows& rows, const float* full, float* packed);
/// Scatters `packed` into the parameters `rows` of `full`; other parameters are left alone.
void unpack_rows(const ParamLayout& layout, const ParamRows& rows, const float* packed,
                 float* full);
/// The restart merge of replicas that live in host memory, done where they are: for every
/// parameter of `rows`, a = sum_i weights[i] x_i (in double, in replica order, skipping zero
/// weights, rounded once: the arithmetic of Communicator's reductions, so the result is the
/// staged merge's bit for bit) is written to `centre` and, unless `centre_only`, to every
/// replica. Each buffer holds layout.total() floats. Reads every touched parameter once and
/// writes it `replicas.size() + 1` times, where the staged merge packs, sums, unpacks and
/// broadcasts through buffers. Parallel over rows with oneTBB.
void average_rows_in_place(const ParamLayout& layout, const ParamRows& rows,
                           const std::vector<float*>& replicas, const std::vector<double>& weights,
                           float* centre, bool centre_only);

}  // namespace hetsgd
