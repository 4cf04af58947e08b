/// \file core/math/input_dropout.h
/// Dropout on the sparse input features of a training batch, shared by every backend.
///
/// Each stored feature value of the batch is kept with probability 1 - p and then scaled by
/// 1 / (1 - p) (inverted dropout, so the expected input is unchanged); dropped values are
/// removed from the copy, so the first layer's row-sparse gradient and lazy optimiser state
/// skip them exactly like absent features. The mask bit of stored value i is the dropout mask
/// of core/math/dropout.h at layer kInputDropoutLayer: a function of (seed, device ordinal,
/// step, i) only, the same on the CPU and CUDA devices. Labels are copied unchanged.
/// Host code (the CUDA device applies it before staging the batch on the GPU).
#pragma once

#include <cstdint>

#include "core/dataset.h"

namespace hetsgd::math {

/// Layer id of the input in dropout_stream(): distinct from every hidden layer's index.
inline constexpr int kInputDropoutLayer = 0xFFFF;

/// `out` = `in` with each stored feature value dropped with probability `p` in (0, 1), the
/// others scaled by 1 / (1 - p); reuses `out`'s capacity. `in` and `out` must differ.
void drop_input_features(const CsrBatch& in, float p, std::uint64_t stream, CsrBatch* out);

}  // namespace hetsgd::math
