/// \file core/types.h
/// Scalar types shared by every layer.
#pragma once

#include <cstdint>

namespace hetsgd {

/// Row offsets, counts and sizes. 64-bit so that nnz > 2^31 datasets work.
using index_t = std::int64_t;
/// A feature or label id inside one row. 32-bit on purpose: XMC ids stay below 2^31
/// (Amazon-3M has 3e6 labels) and halving the index stream matters for memory bandwidth;
/// cuSPARSE accepts 32-bit column indices with 64-bit row offsets.
using col_t = std::int32_t;

}  // namespace hetsgd
