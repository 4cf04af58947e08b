#include "datasets/binary_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/memory_budget.h"

namespace hetsgd::datasets {
namespace {

constexpr std::uint32_t kByteOrderMark = 0x01020304u;

struct CacheHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t byte_order;
  std::int64_t rows;
  std::int64_t num_features;
  std::int64_t num_labels;
  std::int64_t nnz;
  std::int64_t label_nnz;
  std::uint64_t reserved;
};
static_assert(sizeof(CacheHeader) == 64, "cache header layout is part of the format");

// Payload size for the header's counts, before padding and checksum.
std::uint64_t payload_bytes(std::uint64_t rows, std::uint64_t nnz, std::uint64_t label_nnz) {
  return 2 * 8 * (rows + 1) + 8 * nnz + 4 * label_nnz;
}

std::uint64_t padded(std::uint64_t bytes) { return (bytes + 7) / 8 * 8; }

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

void save_cache(const Dataset& data, const std::string& path) {
  data.validate("save_cache " + path);
  CacheHeader h{};
  std::memcpy(h.magic, kCacheMagic, 8);
  h.version = kCacheVersion;
  h.byte_order = kByteOrderMark;
  copy_csr_counts(view_of(data), &h);
  write_file_atomic(path, [&](const ByteSink& sink) {
    Checksum64 sum;
    const auto put = [&](const void* p, std::size_t n) {
      sum.update(p, n);
      sink(p, n);
    };
    put(&h, sizeof(h));
    put(data.x_indptr.data(), data.x_indptr.size() * sizeof(index_t));
    put(data.y_indptr.data(), data.y_indptr.size() * sizeof(index_t));
    put(data.x_indices.data(), data.x_indices.size() * sizeof(col_t));
    put(data.x_values.data(), data.x_values.size() * sizeof(float));
    put(data.y_indices.data(), data.y_indices.size() * sizeof(col_t));
    const std::uint64_t body = payload_bytes(h.rows, h.nnz, h.label_nnz);
    const char zeros[8] = {};
    put(zeros, padded(body) - body);
    const std::uint64_t checksum = sum.finish();
    sink(&checksum, sizeof(checksum));
  });
}

Dataset parse_cache(std::string_view bytes, const std::string& path) {
  // The arrays are read in place, so they must be 8-byte aligned (a mapping always is).
  std::vector<std::uint64_t> aligned;
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 != 0) {
    aligned.resize((bytes.size() + 7) / 8);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    bytes = std::string_view(reinterpret_cast<const char*>(aligned.data()), bytes.size());
  }
  const char* data = bytes.data();
  const std::uint64_t size = bytes.size();
  const auto fail = [&](const std::string& why) -> void { throw IoError(path + ": " + why); };
  if (size < sizeof(CacheHeader) + 8) {
    fail("truncated cache: file has " + std::to_string(size) + " bytes < " +
         std::to_string(sizeof(CacheHeader) + 8) + "-byte minimum (header + checksum)");
  }
  CacheHeader h;
  std::memcpy(&h, data, sizeof(h));
  if (std::memcmp(h.magic, kCacheMagic, 8) != 0) {
    std::string got;
    for (char c : h.magic) got += (c >= 32 && c < 127) ? c : '?';
    fail("wrong magic '" + got + "', expected '" + kCacheMagic + "' (not a hetsgd cache)");
  }
  if (h.version != kCacheVersion) {
    fail("unsupported cache version " + std::to_string(h.version) + ", this build reads version " +
         std::to_string(kCacheVersion));
  }
  if (h.byte_order != kByteOrderMark) {
    fail("byte-order mark " + hex(h.byte_order) + " != " + hex(kByteOrderMark) +
         " (cache written on a machine of other endianness)");
  }
  // Every count must be bounded before it is multiplied: each array element takes at least
  // 4 bytes of the file, so a count above size / 4 already means a truncated file, and the
  // payload size below cannot overflow.
  const std::int64_t limit = static_cast<std::int64_t>(size / 4);
  const std::pair<const char*, std::int64_t> counts[] = {
      {"rows", h.rows}, {"nnz", h.nnz}, {"label_nnz", h.label_nnz}};
  for (const auto& [name, v] : counts) {
    if (v < 0) fail(std::string("header field ") + name + " = " + std::to_string(v) + " < 0");
    if (v > limit) {
      fail(std::string("truncated cache: header field ") + name + " = " + std::to_string(v) +
           " but the file has only " + std::to_string(size) + " bytes");
    }
  }
  constexpr std::int64_t kMaxIds = std::int64_t{1} << 31;
  if (h.num_features < 0 || h.num_features > kMaxIds) {
    fail("header field num_features = " + std::to_string(h.num_features) + " outside [0, 2^31]");
  }
  if (h.num_labels < 0 || h.num_labels > kMaxIds) {
    fail("header field num_labels = " + std::to_string(h.num_labels) + " outside [0, 2^31]");
  }
  if (h.reserved != 0) {
    fail("header field reserved = " + std::to_string(h.reserved) + " != 0");
  }
  const std::uint64_t body = payload_bytes(h.rows, h.nnz, h.label_nnz);
  const std::uint64_t expected = sizeof(CacheHeader) + padded(body) + 8;
  if (size < expected) {
    fail("truncated cache: file has " + std::to_string(size) + " bytes < " +
         std::to_string(expected) + " declared by its header");
  }
  if (size > expected) {
    fail("cache has " + std::to_string(size) + " bytes > " + std::to_string(expected) +
         " declared by its header (trailing garbage)");
  }
  std::uint64_t stored = 0;
  std::memcpy(&stored, data + size - 8, 8);
  const std::uint64_t computed = checksum64(data, size - 8);
  if (stored != computed) {
    fail("checksum mismatch: stored " + hex(stored) + " != computed " + hex(computed) +
         " (corrupted cache)");
  }

  // A valid checksum proves only that the bytes are what some writer wrote: the content is
  // checked against the readers' rules in place, before anything sized by it is allocated.
  CsrView v;
  copy_csr_counts(h, &v);
  const char* p = data + sizeof(CacheHeader);
  v.x_indptr = reinterpret_cast<const index_t*>(p);
  p += 8 * (h.rows + 1);
  v.y_indptr = reinterpret_cast<const index_t*>(p);
  p += 8 * (h.rows + 1);
  v.x_indices = reinterpret_cast<const col_t*>(p);
  p += 4 * h.nnz;
  v.x_values = reinterpret_cast<const float*>(p);
  p += 4 * h.nnz;
  v.y_indices = reinterpret_cast<const col_t*>(p);
  p += 4 * h.label_nnz;
  try {
    validate_csr(v, path);
  } catch (const InvalidArgument& e) {
    throw IoError(std::string("invalid cache content: ") + e.what());
  }
  for (const char* z = p; z < data + size - 8; ++z) {
    if (*z != 0) fail("non-zero padding byte at offset " + std::to_string(z - data));
  }
  check_memory(size, "loading cache '" + path + "' (" + std::to_string(h.rows) + " rows, " +
                         std::to_string(h.nnz) + " nnz)");

  Dataset d;
  d.num_features = h.num_features;
  d.num_labels = h.num_labels;
  d.x_indptr.assign(v.x_indptr, v.x_indptr + h.rows + 1);
  d.y_indptr.assign(v.y_indptr, v.y_indptr + h.rows + 1);
  d.x_indices.assign(v.x_indices, v.x_indices + h.nnz);
  d.x_values.assign(v.x_values, v.x_values + h.nnz);
  d.y_indices.assign(v.y_indices, v.y_indices + h.label_nnz);
  return d;
}

Dataset load_cache(const std::string& path) {
  const MappedFile file(path);
  return parse_cache(file.view(), path);
}

bool is_cache_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[8] = {};
  const ssize_t got = ::read(fd, magic, sizeof(magic));
  ::close(fd);
  return got == static_cast<ssize_t>(sizeof(magic)) && std::memcmp(magic, kCacheMagic, 8) == 0;
}

}  // namespace hetsgd::datasets
