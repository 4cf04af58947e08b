/// \file kernels/cpu/zeroed_buffer.h
/// ZeroedFloats: a float vector whose new elements are zero without being written.
///
/// Memory comes from calloc, which for large blocks maps fresh pages the kernel guarantees to
/// be zero, and resize() does not value-initialise (the allocator's no-argument construct is a
/// no-op). Pages that are never written are never resident, so a model-sized buffer that is
/// only touched on some rows (the optimiser state and gradient of a shortlisted output layer
/// trained with plain SGD, for instance) costs memory only for those rows.
#pragma once

#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

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

}  // namespace hetsgd::cpu
