#include "datasets/validation_split.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/engine/batch_source.h"
#include "core/error.h"

namespace hetsgd::datasets {

std::pair<Dataset, Dataset> split_validation(const Dataset& data, double fraction,
                                             std::uint64_t seed) {
  HETSGD_CHECK(std::isfinite(fraction) && fraction > 0.0 && fraction <= 0.5,
               "validation fraction " << fraction << " outside (0, 0.5]");
  const index_t n = data.rows();
  HETSGD_CHECK(n >= 2, "a validation split needs at least 2 training rows, got " << n);
  const index_t nv = std::clamp<index_t>(
      static_cast<index_t>(std::llround(fraction * static_cast<double>(n))), 1, n - 1);
  // Epoch "-1" of the cursor's generator: a permutation no training epoch uses.
  const std::vector<index_t> perm = BatchSource::permutation(n, seed ^ 0x5eed'0f'7a11ULL, 0);
  std::vector<char> is_val(static_cast<std::size_t>(n), 0);
  for (index_t i = 0; i < nv; ++i) is_val[static_cast<std::size_t>(perm[i])] = 1;
  std::vector<index_t> train_rows, val_rows;
  train_rows.reserve(static_cast<std::size_t>(n - nv));
  val_rows.reserve(static_cast<std::size_t>(nv));
  for (index_t r = 0; r < n; ++r) (is_val[r] ? val_rows : train_rows).push_back(r);
  Dataset train, val;
  gather_rows(data, train_rows.data(), static_cast<index_t>(train_rows.size()), &train);
  gather_rows(data, val_rows.data(), static_cast<index_t>(val_rows.size()), &val);
  for (Dataset* d : {&train, &val}) {
    d->num_features = data.num_features;
    d->num_labels = data.num_labels;
  }
  return {std::move(train), std::move(val)};
}

}  // namespace hetsgd::datasets
