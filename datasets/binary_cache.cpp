#include "datasets/binary_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "core/file_io.h"

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
  h.rows = data.rows();
  h.num_features = data.num_features;
  h.num_labels = data.num_labels;
  h.nnz = data.nnz();
  h.label_nnz = data.label_nnz();
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

Dataset load_cache(const std::string& path) {
  const MappedFile file(path);
  const std::uint64_t size = file.size();
  const auto fail = [&](const std::string& why) -> void { throw IoError(path + ": " + why); };
  if (size < sizeof(CacheHeader) + 8) {
    fail("truncated cache: file has " + std::to_string(size) + " bytes < " +
         std::to_string(sizeof(CacheHeader) + 8) + "-byte minimum (header + checksum)");
  }
  CacheHeader h;
  std::memcpy(&h, file.data(), sizeof(h));
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
  // Every count must be representable before we multiply: each array element takes at least
  // 4 bytes of the file, so a count above size / 4 already means a truncated file.
  const std::int64_t limit = static_cast<std::int64_t>(size / 4);
  const std::pair<const char*, std::int64_t> counts[] = {
      {"rows", h.rows}, {"nnz", h.nnz}, {"label_nnz", h.label_nnz}};
  for (const auto& [name, v] : counts) {
    if (v < 0) fail(std::string("negative ") + name + " " + std::to_string(v) + " in header");
    if (v > limit) {
      fail(std::string("truncated cache: header declares ") + name + " " + std::to_string(v) +
           " but the file has only " + std::to_string(size) + " bytes");
    }
  }
  if (h.num_features < 0 || h.num_labels < 0 || h.num_features > (std::int64_t{1} << 31) ||
      h.num_labels > (std::int64_t{1} << 31)) {
    fail("bad shape in header: num_features " + std::to_string(h.num_features) + ", num_labels " +
         std::to_string(h.num_labels) + " (each must be in [0, 2^31])");
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
  std::memcpy(&stored, file.data() + size - 8, 8);
  const std::uint64_t computed = checksum64(file.data(), size - 8);
  if (stored != computed) {
    fail("checksum mismatch: stored " + hex(stored) + " != computed " + hex(computed) +
         " (corrupted cache)");
  }

  Dataset d;
  d.num_features = h.num_features;
  d.num_labels = h.num_labels;
  const char* p = file.data() + sizeof(CacheHeader);
  const auto take = [&p](auto& vec, std::int64_t n) {
    using T = typename std::decay_t<decltype(vec)>::value_type;
    vec.resize(static_cast<std::size_t>(n));
    if (n > 0) std::memcpy(vec.data(), p, static_cast<std::size_t>(n) * sizeof(T));
    p += static_cast<std::size_t>(n) * sizeof(T);
  };
  take(d.x_indptr, h.rows + 1);
  take(d.y_indptr, h.rows + 1);
  take(d.x_indices, h.nnz);
  take(d.x_values, h.nnz);
  take(d.y_indices, h.label_nnz);
  try {
    d.validate(path);
  } catch (const InvalidArgument& e) {
    throw IoError(std::string("invalid cache content: ") + e.what());
  }
  return d;
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
