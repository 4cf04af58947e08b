#include "core/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <vector>

#include "core/error.h"

namespace hetsgd {
namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int err) {
  throw IoError(what + " '" + path + "': " + std::strerror(err));
}

// Closes a descriptor on scope exit; the mapping (if any) stays valid after close().
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

[[noreturn]] void throw_not_regular(const std::string& what, const std::string& path, mode_t mode) {
  throw IoError(what + " '" + path + "' is not a regular file (" + kind_of(mode) + ")");
}

// Opens `path` for reading after checking its type by name, and checks the opened descriptor
// again: the name may be swapped for a FIFO between the two calls, and O_NONBLOCK keeps that
// open from blocking.
int open_regular(const std::string& path, const std::string& what, struct stat* st) {
  require_regular_input(path, what);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw_errno("cannot open", path, errno);
  if (::fstat(fd, st) != 0) {
    const int err = errno;
    ::close(fd);
    throw_errno("cannot stat", path, err);
  }
  if (!S_ISREG(st->st_mode)) {
    ::close(fd);
    throw_not_regular(what, path, st->st_mode);
  }
  return fd;
}

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Refuses to publish over anything but a regular file (or nothing).
void require_replaceable(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw IoError(what + " '" + path + "' exists and is not a regular file (" +
                  kind_of(st.st_mode) + "); refusing to replace it");
  }
}

// The file `path` names once symbolic links are followed (a dangling link's would-be
// target), so that publishing through a link replaces its target instead of the link.
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(4096);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= buf.size())
      throw_errno("cannot read link", p, errno);
    const std::string target(buf.data(), static_cast<std::size_t>(n));
    p = target.front() == '/' ? target : folder_of(p) + "/" + target;
  }
  throw IoError("'" + path + "': too many levels of symbolic links");
}

// Reads `fd` to its end (at most `limit` bytes, then one more to tell it was longer).
std::string read_to_end(int fd, const std::string& path, std::size_t limit) {
  std::string text;
  std::vector<char> buf(1 << 16);
  while (text.size() <= limit) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("cannot read", path, errno);
    if (n == 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

void require_regular_input(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("cannot open " + what, path, errno);
  if (!S_ISREG(st.st_mode)) throw_not_regular(what, path, st.st_mode);
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  struct stat st {};
  FdGuard fd{open_regular(path, "input file", &st)};
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) {
    // mmap of length 0 is an error. A size of 0 is not proof of emptiness: the kernel's
    // files report it and have content, so read what is there (nothing for an empty file).
    owned_ = read_to_end(fd.fd, path, std::size_t{1} << 30);
    data_ = owned_.empty() ? nullptr : owned_.data();
    size_ = owned_.size();
    return;
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) throw_errno("cannot map", path, errno);
  // Parsers stream through the file once, front to back. Advice values are not flags: one
  // call each (their bitwise or, 3, is MADV_WILLNEED alone).
  ::madvise(p, size_, MADV_SEQUENTIAL);
  ::madvise(p, size_, MADV_WILLNEED);
  data_ = static_cast<const char*>(p);
}

MappedFile::~MappedFile() { release(); }

// An empty file has nothing to release, so the assignment alone does the move.
MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    if (!other.owned_.empty()) {
      owned_ = std::move(other.owned_);
      data_ = owned_.data();
    }
    other.owned_.clear();
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (!owned_.empty()) {
    std::string().swap(owned_);
  } else if (data_ != nullptr) {
    ::munmap(const_cast<char*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

std::string read_text_file(const std::string& path, std::size_t max_bytes,
                           const std::string& what) {
  struct stat st {};
  FdGuard fd{open_regular(path, what, &st)};
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes) {
    throw IoError(what + " '" + path + "' has " + std::to_string(size) + " bytes > limit " +
                  std::to_string(max_bytes));
  }
  // To the end, not to st_size: the kernel's files report size 0 and have content.
  std::string text = read_to_end(fd.fd, path, max_bytes);
  if (text.size() > max_bytes) {
    throw IoError(what + " '" + path + "' has more than " + std::to_string(max_bytes) +
                  " bytes (the limit)");
  }
  return text;
}

void check_output_path(const std::string& given, const std::string& what) {
  if (given.empty()) throw IoError(what + ": empty path");
  if (given.back() == '/') throw IoError(what + " '" + given + "' names a folder, not a file");
  const std::string path = follow_links(given);
  const std::string folder = folder_of(path);
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    throw IoError(what + " '" + path + "': folder '" + folder + "' " +
                  (errno == ENOENT ? "does not exist" : std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw IoError(what + " '" + path + "': '" + folder + "' is not a folder");
  }
  // Publishing creates a temp file and renames it, so the folder itself must be writable.
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw IoError(what + " '" + path + "': folder '" + folder +
                  "' is not writable: " + std::strerror(errno));
  }
  require_replaceable(path, what);
}

std::string temp_path_for(const std::string& path, long pid) {
  return path + ".tmp." + std::to_string(pid);
}

int remove_stale_temp_files(const std::string& path) {
  return remove_stale_pid_files(path + ".tmp.");
}

std::string temp_directory(const std::string& what) {
  std::string named = "/tmp (TMPDIR unset)", dir = "/tmp";
  for (const char* var : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') {
      dir = v;
      named = std::string(var) + "=" + dir;
      break;
    }
  }
  const std::string head = what + " needs a folder for temporary files: " + named + ": ";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw IoError(head + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw IoError(head + "not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw IoError(head + "not writable (" + std::strerror(errno) + ")");
  }
  return dir;
}

int remove_stale_pid_files(const std::string& stem) {
  const std::string folder = folder_of(stem);
  const std::string prefix = base_of(stem);
  if (prefix.empty()) return 0;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    // ESRCH: no such process, so its writer was killed before it could clean up. EPERM means
    // the process exists (owned by someone else) and its file is left alone.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string full = folder == "." && stem.find('/') == std::string::npos
                                 ? name
                                 : folder + (folder == "/" ? "" : "/") + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(full.c_str()) == 0) {
      ++removed;
    }
  }
  ::closedir(dir);
  return removed;
}

void write_file_atomic(const std::string& path,
                       const std::function<void(const ByteSink&)>& produce) {
  write_file_atomic(path, 0, produce, nullptr);
}

void write_file_atomic(const std::string& given, std::size_t header_bytes,
                       const std::function<void(const ByteSink&)>& produce,
                       const std::function<std::string()>& header) {
  const std::string path = follow_links(given);
  require_replaceable(path, "output file");
  remove_stale_temp_files(path);
  const std::string tmp = temp_path_for(path, static_cast<long>(::getpid()));
  // A leftover of this very pid (an earlier failed write in this process) is ours to replace.
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("cannot create", tmp, errno);
  std::FILE* f = ::fdopen(fd, "wb");
  if (f == nullptr) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw_errno("cannot open", tmp, err);
  }
  // 1 MiB stdio buffer: writers emit many small pieces (one per row for text output).
  std::vector<char> buffer(1 << 20);
  std::setvbuf(f, buffer.data(), _IOFBF, buffer.size());
  bool failed = false;
  int err = 0;
  const ByteSink sink = [&](const void* data, std::size_t bytes) {
    if (failed || bytes == 0) return;
    if (std::fwrite(data, 1, bytes, f) != bytes) {
      failed = true;
      err = errno != 0 ? errno : EIO;
    }
  };
  try {
    const std::string gap(header_bytes, '\0');
    sink(gap.data(), gap.size());
    produce(sink);
    if (header) {
      const std::string head = header();
      HETSGD_CHECK(head.size() == header_bytes, "write_file_atomic: a header of "
                                                    << head.size() << " bytes for a gap of "
                                                    << header_bytes);
      if (!failed && std::fseek(f, 0, SEEK_SET) != 0) {
        failed = true;
        err = errno;
      }
      sink(head.data(), head.size());
    }
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (!failed && std::fflush(f) != 0) {
    failed = true;
    err = errno;
  }
  if (!failed && ::fsync(::fileno(f)) != 0) {
    failed = true;
    err = errno;
  }
  if (std::fclose(f) != 0 && !failed) {
    failed = true;
    err = errno;
  }
  if (failed) {
    std::remove(tmp.c_str());
    throw_errno("cannot write", path, err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw_errno("cannot rename temporary file onto", path, err);
  }
  // Make the rename itself durable; a folder that cannot be opened or synced (some network
  // file systems) does not undo a completed write.
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

void check_stream_written(std::ostream& out, const std::string& name) {
  errno = 0;
  out.flush();
  if (!out) {
    const int err = errno;
    throw IoError(name + ": write failed" +
                  (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  }
}

}  // namespace hetsgd
