/// \file kernels/cpu/versioned_params.h
/// VersionedParams: a CPU replica's parameters with a version that every write bumps.
///
/// Caches derived from the parameters (ApproxScorer's label index, label clusters and gathered
/// head) keep the version they were built at and are rebuilt when it moved, so a writer never
/// needs to know which caches exist. The only mutable access is write(), which bumps the
/// version as it hands out the pointer: an optimiser step, a write of the whole buffer and a
/// row-sparse write all go through it, and a caller that writes later through a pointer it
/// kept (a host merge) reports it with written().
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/zeroed_buffer.h"

namespace hetsgd::cpu {

class VersionedParams {
 public:
  /// `n` zeros (untouched pages until written), at version 0.
  explicit VersionedParams(std::size_t n) : values_(zeros(n)) {}

  std::size_t size() const { return values_.size(); }
  const float* data() const { return values_.data(); }
  /// The values, for writing: the version moves first.
  float* write() {
    ++version_;
    return values_.data();
  }
  /// The holder of an earlier write()'s pointer changed the values through it since.
  void written() { ++version_; }
  /// Writes so far; equal versions mean equal values.
  std::uint64_t version() const { return version_; }

 private:
  ZeroedFloats values_;
  std::uint64_t version_ = 0;
};

}  // namespace hetsgd::cpu
