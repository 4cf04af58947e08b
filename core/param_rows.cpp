#include "core/param_rows.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <numeric>

#include "core/error.h"

namespace hetsgd {
namespace {

constexpr index_t kRowGrain = 64;         // W0 rows per task
constexpr index_t kDenseGrain = 1 << 16;  // dense floats per task

// [begin, end) of the dense part in the full buffer.
struct DenseSpan {
  index_t begin = 0, end = 0;
};

DenseSpan dense_span(const ParamLayout& layout, const ParamRows& rows) {
  if (!rows.dense) return {};
  const std::vector<LayerSlice>& ls = layout.layers();
  const index_t start = ls[0].b_offset;
  const index_t stop = rows.output_rows ? ls.back().w_offset : layout.total();
  const index_t end = rows.dense_end < 0 ? stop : std::min(stop, start + rows.dense_end);
  return {std::min(end, start + rows.dense_begin), end};
}

std::vector<col_t> merged(const std::vector<col_t>& a, const std::vector<col_t>& b) {
  std::vector<col_t> out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

void sort_unique(std::vector<col_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// Walks the parameters of `rows` in packed order: `seg(full_off, packed_off, n)` for each
// contiguous run (W0 rows, dense ranges, the listed labels' rows of W_out), in parallel, then
// `bias(full_off, packed_off)` once for the listed labels' entries of b_out.
template <class Seg, class Bias>
void visit_rows(const ParamLayout& layout, const ParamRows& rows, const Seg& seg,
                const Bias& bias) {
  if (rows.everything) {
    tbb::parallel_for(tbb::blocked_range<index_t>(0, layout.total(), kDenseGrain),
                      [&](const tbb::blocked_range<index_t>& r) {
                        seg(r.begin(), r.begin(), r.end() - r.begin());
                      });
    return;
  }
  const std::vector<LayerSlice>& ls = layout.layers();
  const index_t h0 = ls[0].out;
  const auto nin = static_cast<index_t>(rows.input.size());
  tbb::parallel_for(tbb::blocked_range<index_t>(0, nin, kRowGrain),
                    [&](const tbb::blocked_range<index_t>& r) {
                      for (index_t i = r.begin(); i < r.end(); ++i) {
                        seg(ls[0].w_offset + static_cast<index_t>(rows.input[i]) * h0, i * h0, h0);
                      }
                    });
  index_t p = nin * h0;
  const DenseSpan d = dense_span(layout, rows);
  if (d.end > d.begin) {
    tbb::parallel_for(tbb::blocked_range<index_t>(d.begin, d.end, kDenseGrain),
                      [&](const tbb::blocked_range<index_t>& r) {
                        seg(r.begin(), p + (r.begin() - d.begin), r.end() - r.begin());
                      });
    p += d.end - d.begin;
  }
  if (!rows.output_rows || rows.output.empty()) return;
  // Output rows: W_out is stored by label, so each listed label's weights are one run; the
  // biases follow as one block.
  const LayerSlice& out = ls.back();
  const auto nc = static_cast<index_t>(rows.output.size());
  tbb::parallel_for(
      tbb::blocked_range<index_t>(0, nc, kRowGrain), [&](const tbb::blocked_range<index_t>& r) {
        for (index_t c = r.begin(); c < r.end(); ++c) {
          seg(out.w_offset + static_cast<index_t>(rows.output[c]) * out.in, p + c * out.in, out.in);
        }
      });
  bias(out.b_offset, p + nc * out.in);
}

}  // namespace

ParamRows ParamRows::none(bool output_rows) {
  ParamRows s;
  s.everything = false;
  s.dense = false;
  s.output_rows = output_rows;
  return s;
}

ParamRows ParamRows::every_row(const ParamLayout& layout, bool output_rows) {
  ParamRows s = none(output_rows);
  s.dense = true;
  s.input.resize(static_cast<std::size_t>(layout.layers()[0].in));
  std::iota(s.input.begin(), s.input.end(), col_t{0});
  if (output_rows) {
    s.output.resize(static_cast<std::size_t>(layout.layers().back().out));
    std::iota(s.output.begin(), s.output.end(), col_t{0});
  }
  return s;
}

index_t packed_size(const ParamLayout& layout, const ParamRows& rows) {
  if (rows.everything) return layout.total();
  const std::vector<LayerSlice>& ls = layout.layers();
  const DenseSpan d = dense_span(layout, rows);
  index_t n = static_cast<index_t>(rows.input.size()) * ls[0].out + (d.end - d.begin);
  if (rows.output_rows) n += static_cast<index_t>(rows.output.size()) * (ls.back().in + 1);
  return n;
}

double packed_fraction(const ParamLayout& layout, const ParamRows& rows) {
  return static_cast<double>(packed_size(layout, rows)) / static_cast<double>(layout.total());
}

ParamRows unite(const ParamRows& a, const ParamRows& b) {
  if (a.everything || b.everything) return ParamRows::all();
  HETSGD_CHECK(a.output_rows == b.output_rows,
               "unite: one row set has a row-sparse output layer, the other a dense one");
  ParamRows s = ParamRows::none(a.output_rows);
  s.dense = a.dense || b.dense;
  s.input = merged(a.input, b.input);
  s.output = merged(a.output, b.output);
  return s;
}

void normalise(ParamRows* rows) {
  sort_unique(&rows->input);
  sort_unique(&rows->output);
}

std::vector<ParamRows> split_rows(const ParamLayout& layout, const ParamRows& rows,
                                  index_t max_floats) {
  HETSGD_CHECK(!rows.everything, "split_rows: needs listed rows, not every parameter");
  HETSGD_CHECK(max_floats >= 1, "split_rows: max_floats " << max_floats << " < 1");
  const std::vector<LayerSlice>& ls = layout.layers();
  std::vector<ParamRows> pieces;
  auto piece = [&] {
    pieces.push_back(ParamRows::none(rows.output_rows));
    return &pieces.back();
  };
  const index_t h0 = ls[0].out;
  const index_t per_in = std::max<index_t>(1, max_floats / h0);
  for (std::size_t i = 0; i < rows.input.size(); i += static_cast<std::size_t>(per_in)) {
    const std::size_t e = std::min(rows.input.size(), i + static_cast<std::size_t>(per_in));
    piece()->input.assign(rows.input.begin() + static_cast<std::ptrdiff_t>(i),
                          rows.input.begin() + static_cast<std::ptrdiff_t>(e));
  }
  const DenseSpan d = dense_span(layout, rows);
  for (index_t b = d.begin; b < d.end; b += max_floats) {
    ParamRows* p = piece();
    p->dense = true;
    p->dense_begin = b - ls[0].b_offset;
    p->dense_end = std::min(d.end, b + max_floats) - ls[0].b_offset;
  }
  const index_t per_out = std::max<index_t>(1, max_floats / (ls.back().in + 1));
  for (std::size_t i = 0; i < rows.output.size(); i += static_cast<std::size_t>(per_out)) {
    const std::size_t e = std::min(rows.output.size(), i + static_cast<std::size_t>(per_out));
    piece()->output.assign(rows.output.begin() + static_cast<std::ptrdiff_t>(i),
                           rows.output.begin() + static_cast<std::ptrdiff_t>(e));
  }
  return pieces;
}

namespace {

// pack_rows and unpack_rows move the same floats between the full buffer and the packed one;
// kPack picks the direction (from full to packed, or back), so both walk one list.
template <bool kPack>
void move_rows(const ParamLayout& layout, const ParamRows& rows, const float* from, float* to) {
  const col_t* ids = rows.output.data();
  const auto nc = static_cast<index_t>(rows.output.size());
  visit_rows(
      layout, rows,
      [&](index_t f, index_t p, index_t n) {
        std::memcpy(to + (kPack ? p : f), from + (kPack ? f : p),
                    sizeof(float) * static_cast<std::size_t>(n));
      },
      [&](index_t f, index_t p) {
        for (index_t c = 0; c < nc; ++c) {
          const index_t full_at = f + ids[c], packed_at = p + c;
          to[kPack ? packed_at : full_at] = from[kPack ? full_at : packed_at];
        }
      });
}

}  // namespace

void pack_rows(const ParamLayout& layout, const ParamRows& rows, const float* full, float* packed) {
  move_rows<true>(layout, rows, full, packed);
}

void unpack_rows(const ParamLayout& layout, const ParamRows& rows, const float* packed,
                 float* full) {
  move_rows<false>(layout, rows, packed, full);
}

void average_rows_in_place(const ParamLayout& layout, const ParamRows& rows,
                           const std::vector<float*>& replicas, const std::vector<double>& weights,
                           float* centre, bool centre_only) {
  HETSGD_CHECK(!replicas.empty() && weights.size() == replicas.size(),
               "average_rows_in_place: " << weights.size() << " weights for " << replicas.size()
                                         << " replicas");
  const std::size_t k = replicas.size();
  auto merge_one = [&](index_t at) {
    double a = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      if (weights[i] != 0.0) a += weights[i] * static_cast<double>(replicas[i][at]);
    }
    const auto z = static_cast<float>(a);
    centre[at] = z;
    if (centre_only) return;
    for (std::size_t i = 0; i < k; ++i) replicas[i][at] = z;
  };
  const col_t* ids = rows.output.data();
  const auto nc = static_cast<index_t>(rows.output.size());
  visit_rows(
      layout, rows,
      [&](index_t f, index_t, index_t n) {
        for (index_t j = f; j < f + n; ++j) merge_one(j);
      },
      [&](index_t f, index_t) {
        for (index_t c = 0; c < nc; ++c) merge_one(f + ids[c]);
      });
}

}  // namespace hetsgd
