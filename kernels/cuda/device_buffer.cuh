/// \file kernels/cuda/device_buffer.cuh
/// Owning RAII buffers: device memory (cudaMalloc) and pinned host memory (cudaMallocHost).
///
/// Both grow on demand and never shrink (a batch larger than any before reallocates once);
/// contents are not preserved across growth. DeviceBuffer grows stream-ordered when given a
/// stream (cudaFreeAsync / cudaMallocAsync on that stream: no device-wide synchronisation, and
/// the old block is released only after the work already queued on the stream); without one it
/// uses cudaMalloc and the owner must make sure no stream still uses the old allocation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/check.cuh"

namespace hetsgd::cuda {

/// `count` elements of T in device memory of the current GPU.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Makes room for at least `count` elements (reallocating only when growing).
  void reserve(std::size_t count) {
    if (count <= size_) return;
    release();
    HETSGD_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
    size_ = count;
  }
  /// Makes room for at least `count` elements, stream-ordered on `stream`: the old block is
  /// freed and the new one allocated in the order of the work queued there, so the caller
  /// needs no synchronisation as long as every user of the buffer runs on `stream`.
  void reserve(std::size_t count, cudaStream_t stream) {
    if (count <= size_) return;
    if (ptr_ != nullptr) HETSGD_CUDA_CHECK(cudaFreeAsync(ptr_, stream));
    ptr_ = nullptr;
    size_ = 0;
    HETSGD_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), count * sizeof(T), stream));
    size_ = count;
  }
  /// Exactly `count` elements (reallocates when the size differs).
  void resize(std::size_t count) {
    if (count == size_) return;
    release();
    if (count == 0) return;
    HETSGD_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
    size_ = count;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  // cudaFree also releases blocks from cudaMallocAsync (after an implicit synchronisation).
  void release() {
    if (ptr_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaFree(ptr_));
    ptr_ = nullptr;
    size_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/// Page-locked host memory, so that cudaMemcpyAsync really is asynchronous.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// Makes room for at least `bytes` bytes.
  void reserve(std::size_t bytes) {
    if (bytes <= bytes_) return;
    release();
    HETSGD_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    bytes_ = bytes;
  }
  void* data() { return ptr_; }
  const void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (ptr_ != nullptr) HETSGD_CUDA_CHECK_NOTHROW(cudaFreeHost(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace hetsgd::cuda
