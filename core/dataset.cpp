#include "core/dataset.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace hetsgd {
namespace {

// Ids are stored as col_t, so an id space wider than 2^31 cannot be represented.
constexpr index_t kMaxIds = index_t{std::numeric_limits<col_t>::max()} + 1;

// Checks one CSR offset array: starts at 0, never decreases, ends at `count`.
void check_offsets(const index_t* indptr, index_t rows, index_t count, const char* field,
                   const char* count_name, const std::string& what) {
  HETSGD_CHECK(indptr[0] == 0, what << ": " << field << "[0] = " << indptr[0] << " != 0");
  for (index_t r = 0; r < rows; ++r) {
    HETSGD_CHECK(indptr[r + 1] >= indptr[r],
                 what << ": " << field << "[" << r + 1 << "] = " << indptr[r + 1] << " < " << field
                      << "[" << r << "] = " << indptr[r] << " (offsets must not decrease)");
    HETSGD_CHECK(indptr[r + 1] <= count, what << ": " << field << "[" << r + 1
                                              << "] = " << indptr[r + 1] << " > " << count_name
                                              << " " << count);
  }
  HETSGD_CHECK(indptr[rows] == count, what << ": last " << field << " offset " << indptr[rows]
                                           << " != " << count_name << " " << count);
}

// Checks the ids of each row: in [0, bound) and strictly ascending.
void check_ids(const index_t* indptr, const col_t* ids, index_t rows, index_t bound,
               const char* field, const char* bound_name, const char* kind,
               const std::string& what) {
  for (index_t r = 0; r < rows; ++r) {
    for (index_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      HETSGD_CHECK(ids[k] >= 0 && ids[k] < bound,
                   what << ": " << field << "[" << k << "] (row " << r << ") = " << ids[k] << ": "
                        << kind << " id out of range [0, " << bound_name << " " << bound << ")");
      if (k > indptr[r]) {
        HETSGD_CHECK(ids[k] > ids[k - 1],
                     what << ": " << field << "[" << k << "] (row " << r << ") = " << ids[k]
                          << (ids[k] == ids[k - 1] ? ": duplicate " : ": unsorted ") << kind
                          << " id (previous " << ids[k - 1] << "; " << kind
                          << " ids of a row must be strictly ascending)");
      }
    }
  }
}

}  // namespace

void Dataset::clear_rows() {
  x_indptr.assign(1, 0);
  x_indices.clear();
  x_values.clear();
  y_indptr.assign(1, 0);
  y_indices.clear();
}

CsrView view_of(const Dataset& d) {
  CsrView v;
  v.rows = d.rows();
  v.num_features = d.num_features;
  v.num_labels = d.num_labels;
  v.nnz = d.nnz();
  v.label_nnz = d.label_nnz();
  v.x_indptr = d.x_indptr.data();
  v.y_indptr = d.y_indptr.data();
  v.x_indices = d.x_indices.data();
  v.x_values = d.x_values.data();
  v.y_indices = d.y_indices.data();
  return v;
}

void validate_csr(const CsrView& c, const std::string& what) {
  HETSGD_CHECK(c.rows >= 0 && c.nnz >= 0 && c.label_nnz >= 0,
               what << ": negative count (rows " << c.rows << ", nnz " << c.nnz << ", label_nnz "
                    << c.label_nnz << ")");
  HETSGD_CHECK(c.num_features >= 0 && c.num_features <= kMaxIds,
               what << ": num_features " << c.num_features << " outside [0, 2^31]");
  HETSGD_CHECK(c.num_labels >= 0 && c.num_labels <= kMaxIds,
               what << ": num_labels " << c.num_labels << " outside [0, 2^31]");
  check_offsets(c.x_indptr, c.rows, c.nnz, "x_indptr", "nnz", what);
  check_offsets(c.y_indptr, c.rows, c.label_nnz, "y_indptr", "label_nnz", what);
  check_ids(c.x_indptr, c.x_indices, c.rows, c.num_features, "x_indices", "num_features", "feature",
            what);
  check_ids(c.y_indptr, c.y_indices, c.rows, c.num_labels, "y_indices", "num_labels", "label",
            what);
  for (index_t k = 0; k < c.nnz; ++k) {
    if (!std::isfinite(c.x_values[k])) {
      // Finding the row is a binary search; it only runs on the error path.
      index_t lo = 0, hi = c.rows;
      while (hi - lo > 1) {
        const index_t mid = lo + (hi - lo) / 2;
        (c.x_indptr[mid] <= k ? lo : hi) = mid;
      }
      HETSGD_CHECK(false, what << ": x_values[" << k << "] (row " << lo << ") = " << c.x_values[k]
                               << " is not finite");
    }
  }
}

void Dataset::validate(const std::string& what) const {
  HETSGD_CHECK(!x_indptr.empty(), what << ": empty feature offsets");
  HETSGD_CHECK(y_indptr.size() == x_indptr.size(),
               what << ": " << y_indptr.size() - 1 << " label rows != " << rows() << " rows");
  HETSGD_CHECK(x_values.size() == x_indices.size(),
               what << ": " << x_values.size() << " values != " << x_indices.size() << " indices");
  validate_csr(view_of(*this), what);
}

void gather_rows(const Dataset& src, const index_t* rows, index_t n, CsrBatch* out) {
  out->num_features = src.num_features;
  out->num_labels = src.num_labels;
  out->clear_rows();
  out->x_indptr.reserve(n + 1);
  out->y_indptr.reserve(n + 1);
  for (index_t i = 0; i < n; ++i) {
    const index_t r = rows[i];
    HETSGD_ASSERT(r >= 0 && r < src.rows());
    const index_t xb = src.x_indptr[r], xe = src.x_indptr[r + 1];
    out->x_indices.insert(out->x_indices.end(), src.x_indices.begin() + xb,
                          src.x_indices.begin() + xe);
    out->x_values.insert(out->x_values.end(), src.x_values.begin() + xb, src.x_values.begin() + xe);
    out->x_indptr.push_back(static_cast<index_t>(out->x_indices.size()));
    const index_t yb = src.y_indptr[r], ye = src.y_indptr[r + 1];
    out->y_indices.insert(out->y_indices.end(), src.y_indices.begin() + yb,
                          src.y_indices.begin() + ye);
    out->y_indptr.push_back(static_cast<index_t>(out->y_indices.size()));
  }
}

Dataset draw_rows(const Dataset& src, std::uint64_t seed) {
  std::vector<index_t> order(static_cast<size_t>(src.rows()));
  for (index_t i = 0; i < src.rows(); ++i) order[static_cast<size_t>(i)] = i;
  // Fisher-Yates with the project's generator: the order does not depend on the standard
  // library's shuffle.
  SplitMix64 rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  Dataset out;
  gather_rows(src, order.data(), src.rows(), &out);
  return out;
}

void slice_rows(const Dataset& src, index_t begin, index_t end, CsrBatch* out) {
  HETSGD_CHECK(0 <= begin && begin <= end && end <= src.rows(),
               "slice [" << begin << ", " << end << ") out of [0, " << src.rows() << ")");
  std::vector<index_t> idx(static_cast<size_t>(end - begin));
  for (index_t i = begin; i < end; ++i) idx[i - begin] = i;
  gather_rows(src, idx.data(), end - begin, out);
}

void append_rows(const Dataset& src, Dataset* dst) {
  HETSGD_CHECK(src.num_features <= dst->num_features && src.num_labels <= dst->num_labels,
               "append_rows: rows of " << src.num_features << " features and " << src.num_labels
                                       << " labels into a set of " << dst->num_features << " and "
                                       << dst->num_labels);
  const index_t x0 = dst->nnz(), y0 = dst->label_nnz();
  dst->x_indices.insert(dst->x_indices.end(), src.x_indices.begin(), src.x_indices.end());
  dst->x_values.insert(dst->x_values.end(), src.x_values.begin(), src.x_values.end());
  dst->y_indices.insert(dst->y_indices.end(), src.y_indices.begin(), src.y_indices.end());
  for (index_t r = 1; r <= src.rows(); ++r) {
    dst->x_indptr.push_back(x0 + src.x_indptr[r]);
    dst->y_indptr.push_back(y0 + src.y_indptr[r]);
  }
}

}  // namespace hetsgd
