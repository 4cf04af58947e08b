/// \file core/file_io.h
/// Whole-file input by one read-only memory mapping, and atomic output (temp file + rename).
///
/// Every reader (datasets, model files, checkpoints) goes through MappedFile so that a text or
/// cache file is touched by exactly one mmap (no iostreams, no per-line reads), and every writer
/// goes through write_file_atomic so that a crash or a full disk never leaves a half-written file
/// under the final name. Errors are hetsgd::IoError naming the path and the system error.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace hetsgd {

/// A read-only view of a whole file, memory-mapped for the lifetime of the object.
///
/// An empty file is valid and gives `size() == 0` (nothing is mapped). Move-only. Concurrent
/// reads of `view()` from several threads are safe.
class MappedFile {
 public:
  /// Maps `path` read-only. Throws IoError "cannot open '<path>': <reason>" when the file is
  /// missing, unreadable or a directory.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// First byte of the file (nullptr when the file is empty).
  const char* data() const { return data_; }
  /// File length in bytes.
  std::size_t size() const { return size_; }
  /// The whole file as a string view.
  std::string_view view() const { return {data_, size_}; }
  /// The path the file was opened with (used in error messages).
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Sink handed to a writer callback: appends bytes to the temporary file (buffered).
using ByteSink = std::function<void(const void* data, std::size_t bytes)>;

/// Writes a file atomically: `produce(sink)` streams the content into `<path>.tmp.<pid>`, which
/// is flushed and renamed over `path` only when `produce` returns normally. On any error
/// (including an exception thrown by `produce`) the temporary file is removed and the
/// previous content of `path`, if any, is left untouched. Throws IoError naming the path.
void write_file_atomic(const std::string& path,
                       const std::function<void(const ByteSink&)>& produce);

/// write_file_atomic for content already in memory.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace hetsgd
