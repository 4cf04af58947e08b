#include "core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
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

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) throw_errno("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw_errno("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) throw_errno("cannot open", path, EISDIR);
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) return;  // mmap of length 0 is an error; an empty view is what callers want
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) throw_errno("cannot map", path, errno);
  // Parsers stream through the file once, front to back.
  ::madvise(p, size_, MADV_SEQUENTIAL | MADV_WILLNEED);
  data_ = static_cast<const char*>(p);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void write_file_atomic(const std::string& path,
                       const std::function<void(const ByteSink&)>& produce) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw_errno("cannot create", tmp, errno);
  // 1 MiB stdio buffer: writers emit many small pieces (one per row for text output).
  std::vector<char> buffer(1 << 20);
  std::setvbuf(f, buffer.data(), _IOFBF, buffer.size());
  bool failed = false;
  int err = 0;
  const ByteSink sink = [&](const void* data, std::size_t bytes) {
    if (failed || bytes == 0) return;
    if (std::fwrite(data, 1, bytes, f) != bytes) {
      failed = true;
      err = errno;
    }
  };
  try {
    produce(sink);
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
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

}  // namespace hetsgd
