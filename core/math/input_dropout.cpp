#include "core/math/input_dropout.h"

#include "core/math/dropout.h"

namespace hetsgd::math {

void drop_input_features(const CsrBatch& in, float p, std::uint64_t stream, CsrBatch* out) {
  const std::uint32_t threshold = dropout_threshold(p);
  const float keep_scale = 1.0f / (1.0f - p);
  out->num_features = in.num_features;
  out->num_labels = in.num_labels;
  out->x_indptr.assign(1, 0);
  out->x_indices.clear();
  out->x_values.clear();
  // Serial: a batch holds a few thousand values, and the copy's order must not depend on
  // threads anyway.
  for (index_t r = 0; r < in.rows(); ++r) {
    for (index_t k = in.x_indptr[r]; k < in.x_indptr[r + 1]; ++k) {
      if (!dropout_keep(stream, static_cast<std::uint64_t>(k), threshold)) continue;
      out->x_indices.push_back(in.x_indices[k]);
      out->x_values.push_back(in.x_values[k] * keep_scale);
    }
    out->x_indptr.push_back(static_cast<index_t>(out->x_indices.size()));
  }
  out->y_indptr = in.y_indptr;
  out->y_indices = in.y_indices;
}

}  // namespace hetsgd::math
