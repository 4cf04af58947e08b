/// \file kernels/cpu/topk.h
/// Top-k labels of rows of scores on the host, row-parallel over the caller's arena, with the
/// shared ordering of core/math/topk.h (higher score first, ties to the smaller id).
#pragma once

#include "core/types.h"

namespace hetsgd::cpu {

/// The top-`k` labels of each row of `z` ([rows x num_labels]), best first, into `labels` /
/// `scores` ([rows x k]; ids -1 / scores -inf pad rows with fewer than k labels).
void topk_rows(const float* z, index_t rows, index_t num_labels, int k, col_t* labels,
               float* scores);

}  // namespace hetsgd::cpu
