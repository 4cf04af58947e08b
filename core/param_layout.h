/// \file core/param_layout.h
/// Where each layer's weights and bias live inside the one contiguous parameter buffer.
///
/// Every replica (CPU or GPU) stores its parameters as one float array of `total()` elements in
/// this order: W0, b0, W1, b1, ..., so averaging, broadcast and all-reduce are single calls.
/// W_l is row-major [in_l x out_l] (row f of W0 is feature f's vector), except the output
/// layer's, which is stored by label: row-major [L x in] like PyTorch's nn.Linear weight, so
/// label j's vector is one contiguous row. Shortlisted steps, sparse merges and the label
/// index read and write whole labels, which in an [in x L] matrix cost one cache line per
/// hidden unit and label (40% of a shortlisted step at 670,091 labels). b_l has out_l
/// elements.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_config.h"
#include "core/types.h"

namespace hetsgd {

/// One layer's slice of the parameter buffer.
struct LayerSlice {
  index_t in = 0;        ///< input width
  index_t out = 0;       ///< output width
  index_t w_offset = 0;  ///< offset of W (in*out floats, row-major)
  /// W is stored [out x in] (the output layer), not [in x out].
  bool by_output = false;
  index_t b_offset = 0;  ///< offset of b (out floats)
};

/// Offsets of every layer in the contiguous buffer.
class ParamLayout {
 public:
  ParamLayout() = default;
  explicit ParamLayout(const ModelConfig& config);

  const std::vector<LayerSlice>& layers() const { return layers_; }
  index_t num_layers() const { return static_cast<index_t>(layers_.size()); }
  /// Number of floats in the buffer.
  index_t total() const { return total_; }
  /// Number of parameters in the sparse (first) layer's weight matrix.
  index_t sparse_weights() const { return layers_.empty() ? 0 : layers_[0].in * layers_[0].out; }

 private:
  std::vector<LayerSlice> layers_;
  index_t total_ = 0;
};

/// Fills `params` (layout.total() floats) the way PyTorch's nn.Linear does by default:
/// W and b uniform in [-1/sqrt(in), 1/sqrt(in)], from a counter-based generator seeded by
/// `seed`, so every backend and the PyTorch baseline can reproduce the same start. Element
/// (i, j) of a W (input i, output j) draws with the counter w_offset + i * out + j whichever
/// way the layer is stored, so the initial model does not depend on the storage order.
void init_params(const ParamLayout& layout, std::uint64_t seed, float* params);

}  // namespace hetsgd
