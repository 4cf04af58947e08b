/// \file kernels/cpu/dropout.h
/// Inverted dropout on the host (core/math/dropout.h), row-parallel over the caller's arena.
/// Twin of kernels/cuda/dropout.cu.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace hetsgd::cpu {

/// h[i] = dropout_apply(h[i], stream, i, ...) for the [rows x width] activations `h`, in place,
/// at drop probability `p` in (0, 1). Element i's mask bit depends only on (stream, i).
void dropout_forward(float* h, index_t rows, index_t width, float p, std::uint64_t stream);

/// Backward of dropout on a layer's activation gradient `d` ([rows x width]), already masked by
/// the layer's post-dropout activations (zero where an element was dropped or inactive): the
/// kept elements' scale 1 / (1 - p), applied to every element.
void dropout_backward(float* d, index_t rows, index_t width, float p);

}  // namespace hetsgd::cpu
