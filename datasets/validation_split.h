/// \file datasets/validation_split.h
/// A deterministic validation split of a training set (model selection: keep-best, early
/// stopping and every default are chosen on it, never on the test set).
#pragma once

#include <cstdint>
#include <utility>

#include "core/dataset.h"

namespace hetsgd::datasets {

/// Splits `data` into (train, validation): the validation rows are the first
/// round(fraction * rows) entries of a seeded shuffle of the rows (the cursor's permutation,
/// so the split is identical on every platform), each part keeping the original row order.
/// `fraction` in (0, 0.5]; at least one row stays on each side. Throws InvalidArgument.
std::pair<Dataset, Dataset> split_validation(const Dataset& data, double fraction,
                                             std::uint64_t seed);

}  // namespace hetsgd::datasets
