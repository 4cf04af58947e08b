/// \file kernels/cpu/zeroed_buffer.h
/// ZeroedFloats: a float vector whose new elements are zero without being written.
///
/// Memory comes from calloc, which for large blocks maps fresh pages the kernel guarantees to
/// be zero, and resize() does not value-initialise (the allocator's no-argument construct is a
/// no-op). Pages that are never written are never resident, so a model-sized buffer that is
/// only touched on some rows (the optimiser state and gradient of a shortlisted output layer
/// trained with plain SGD, for instance) costs memory only for those rows.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/resident.h"

namespace hetsgd::cpu {

/// calloc-backed allocator whose value-initialisation leaves the (already zero) memory alone.
template <typename T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <typename U>
  ZeroedAllocator(const ZeroedAllocator<U>&) noexcept {}  // NOLINT: allocator rebind
  T* allocate(std::size_t n) {
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  template <typename U>
  void construct(U*) noexcept {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const ZeroedAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const ZeroedAllocator<U>&) const noexcept {
    return false;
  }
};

/// Only make one with zeros(): resize() of a non-empty one would expose old values.
using ZeroedFloats = std::vector<float, ZeroedAllocator<float>>;

/// A fresh buffer of `n` zeros (untouched pages until written).
inline ZeroedFloats zeros(std::size_t n) {
  ZeroedFloats v;
  v.resize(n);
  return v;
}

/// Makes the pages of the `n` floats at `p`, which already read zero (a buffer from zeros()),
/// resident, in blocks of 16 MiB on every core, with `*stop` (when given) read before each
/// block. Mapping the pages is most of the time a model-sized buffer takes to set up: each
/// block is mapped by one MADV_POPULATE_WRITE (core/resident.h), not a fault per page, and
/// written with zeros where the kernel cannot, as it was before (of the order of a second per
/// GB, more in a virtual machine, where a fault costs microseconds). A replica of a large model
/// can so be abandoned within a block. Throws Error "<what>: interrupted" once `*stop` is set;
/// every element stays zero either way.
inline void prefault_zeros(float* p, std::size_t n, const std::atomic<bool>* stop,
                           const std::string& what) {
  constexpr std::size_t kBlock = (std::size_t{16} << 20) / sizeof(float);
  std::atomic<bool> stopped{false};
  tbb::parallel_for(std::size_t{0}, (n + kBlock - 1) / kBlock, [&](std::size_t b) {
    if (stopped.load(std::memory_order_relaxed) ||
        (stop != nullptr && stop->load(std::memory_order_relaxed))) {
      stopped.store(true, std::memory_order_relaxed);
      return;
    }
    const std::size_t len = std::min(kBlock, n - b * kBlock);
    if (!make_resident(p + b * kBlock, sizeof(float) * len))
      std::memset(p + b * kBlock, 0, sizeof(float) * len);
  });
  if (stopped.load()) throw Error(what + ": interrupted");
}

}  // namespace hetsgd::cpu
