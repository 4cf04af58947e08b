#include "core/dataset.h"

#include "core/error.h"

namespace hetsgd {

void Dataset::clear_rows() {
  x_indptr.assign(1, 0);
  x_indices.clear();
  x_values.clear();
  y_indptr.assign(1, 0);
  y_indices.clear();
}

void Dataset::validate(const std::string& what) const {
  HETSGD_CHECK(!x_indptr.empty() && x_indptr.front() == 0, what << ": empty feature offsets");
  HETSGD_CHECK(y_indptr.size() == x_indptr.size(),
               what << ": " << y_indptr.size() - 1 << " label rows != " << rows() << " rows");
  HETSGD_CHECK(x_values.size() == x_indices.size(),
               what << ": " << x_values.size() << " values != " << x_indices.size() << " indices");
  HETSGD_CHECK(x_indptr.back() == nnz(),
               what << ": last feature offset " << x_indptr.back() << " != nnz " << nnz());
  HETSGD_CHECK(y_indptr.back() == label_nnz(),
               what << ": last label offset " << y_indptr.back() << " != " << label_nnz());
  for (index_t r = 0; r < rows(); ++r) {
    HETSGD_CHECK(x_indptr[r] <= x_indptr[r + 1] && y_indptr[r] <= y_indptr[r + 1],
                 what << ": row " << r << " has decreasing offsets");
    for (index_t k = x_indptr[r]; k < x_indptr[r + 1]; ++k) {
      HETSGD_CHECK(x_indices[k] >= 0 && x_indices[k] < num_features,
                   what << ": row " << r << ": feature id " << x_indices[k] << " out of range [0, "
                        << num_features << ")");
    }
    for (index_t k = y_indptr[r]; k < y_indptr[r + 1]; ++k) {
      HETSGD_CHECK(y_indices[k] >= 0 && y_indices[k] < num_labels,
                   what << ": row " << r << ": label id " << y_indices[k] << " out of range [0, "
                        << num_labels << ")");
    }
  }
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

void slice_rows(const Dataset& src, index_t begin, index_t end, CsrBatch* out) {
  HETSGD_CHECK(0 <= begin && begin <= end && end <= src.rows(),
               "slice [" << begin << ", " << end << ") out of [0, " << src.rows() << ")");
  std::vector<index_t> idx(static_cast<size_t>(end - begin));
  for (index_t i = begin; i < end; ++i) idx[i - begin] = i;
  gather_rows(src, idx.data(), end - begin, out);
}

}  // namespace hetsgd
