/// \file core/file_io.h
/// Whole-file input by one read-only memory mapping, checked input and output paths, and
/// atomic output (temp file + rename).
///
/// Every reader (datasets, model files, checkpoints) goes through MappedFile (or
/// read_text_file for small JSON and config files), so an input is always a regular file: a
/// FIFO, a device or a directory is refused by name before it is opened, so nothing blocks
/// on a pipe or reads an endless device. Every writer goes through write_file_atomic so that
/// a crash or a full disk never leaves a half-written file under the final name, and a
/// non-regular file at the output path is never replaced. Errors are hetsgd::IoError naming
/// the path and the system error. All functions are safe to call from several threads on
/// different paths.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace hetsgd {

/// Throws IoError "'<path>' is not a regular file (<kind>)" when `path` exists and is a
/// FIFO, socket, character or block device or a directory, and "cannot open '<path>': ..."
/// when it does not exist. Symbolic links are followed. `what` ("data file", "model file")
/// starts the message.
void require_regular_input(const std::string& path, const std::string& what = "input file");

/// A read-only view of a whole file, memory-mapped for the lifetime of the object.
///
/// An empty file is valid and gives `size() == 0` (nothing is mapped). A file whose size the
/// system reports as 0 but that has content (the kernel's /proc and /sys files) is read into
/// memory instead. Move-only. Concurrent reads of `view()` from several threads are safe.
class MappedFile {
 public:
  /// Maps `path` read-only. Throws IoError "cannot open '<path>': <reason>" when the file is
  /// missing or unreadable, and the require_regular_input() message for a directory, FIFO,
  /// socket or device (refused before opening, so a FIFO never blocks).
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
  std::string owned_;  ///< the content when it was read, not mapped (data_ points into it)
};

/// Reads a small text input (JSON, config) of at most `max_bytes` bytes. The path must be a
/// regular file (require_regular_input); a longer file is refused before it is read with
/// IoError "'<path>': <what> has N bytes > limit M". `what` names the input in messages.
std::string read_text_file(const std::string& path, std::size_t max_bytes,
                           const std::string& what = "input file");

/// Checks, before any work is done, that `path` can be published by write_file_atomic: its
/// folder exists, is a directory and is writable, and `path` is absent or a regular file.
/// A symbolic link is followed: the checks apply to the file it names.
/// Throws IoError naming the path (and the folder) and the reason. `what` ("model output",
/// "checkpoint") starts the message.
void check_output_path(const std::string& path, const std::string& what = "output file");

/// Sink handed to a writer callback: appends bytes to the temporary file (buffered).
using ByteSink = std::function<void(const void* data, std::size_t bytes)>;

/// Writes a file atomically: `produce(sink)` streams the content into `<path>.tmp.<pid>`
/// (created exclusively, next to the target), which is flushed, fsync'ed, closed (checked) and
/// renamed over `path` only when `produce` returns normally and every write succeeded. On any
/// error (a short write on a full disk, an exception thrown by `produce`) the temporary file is
/// removed and the previous content of `path`, if any, is left untouched. A non-regular file
/// at `path` (device, FIFO, directory) is refused, never replaced. A symbolic link at `path`
/// is written through: the file it names (even a dangling link's) is replaced atomically in
/// its own folder and the link is kept, as `cp` and editors do. Temporary files
/// `<path>.tmp.<pid>` left by a writer that was killed (its pid no longer runs) are removed
/// first. Throws IoError naming the path and the system error.
void write_file_atomic(const std::string& path,
                       const std::function<void(const ByteSink&)>& produce);

/// write_file_atomic for content that starts with a header known only once the rest is
/// written (its size, its checksum): `produce` streams what follows `header_bytes` bytes left
/// for it, then `header()` (exactly `header_bytes` bytes) is written over them, before the
/// file is synced and renamed.
void write_file_atomic(const std::string& path, std::size_t header_bytes,
                       const std::function<void(const ByteSink&)>& produce,
                       const std::function<std::string()>& header);

/// write_file_atomic for content already in memory.
void write_file_atomic(const std::string& path, const std::string& bytes);

/// Name of the temporary file write_file_atomic uses for `path` in process `pid`.
std::string temp_path_for(const std::string& path, long pid);

/// Removes `<path>.tmp.<pid>` files whose pid is not a running process (left by a killed
/// writer); returns how many were removed. Never throws.
int remove_stale_temp_files(const std::string& path);

/// Removes the regular files named `<stem><pid>` (pid: decimal digits) whose pid is not a
/// running process: a process's scratch files left by a kill (e.g. stem "model.bin.best."
/// or "/tmp/hetsgd-best."). Files of running processes and of this one are kept. Returns how
/// many were removed. Never throws.
int remove_stale_pid_files(const std::string& stem);

/// The folder for temporary files: the first of $TMPDIR, $TMP, $TEMP, $TEMPDIR that is set
/// (as std::filesystem::temp_directory_path reads them), else /tmp. Throws IoError
/// "<what> needs a folder for temporary files: TMPDIR=<dir>: <reason>" when it does not
/// exist, is not a directory, or is not writable.
std::string temp_directory(const std::string& what);

/// Flushes `out` and throws IoError "<name>: write failed: <reason>" when the stream is in a
/// failed state (e.g. stdout redirected to a full disk). Call once at the end of a command
/// that prints its results.
void check_stream_written(std::ostream& out, const std::string& name);

}  // namespace hetsgd
