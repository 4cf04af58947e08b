#include "datasets/zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/error.h"
#include "core/memory_budget.h"

namespace hetsgd::datasets {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw IoError(where + ": " + what);
}

// [at, at + n) lies within `size` bytes; no sum can wrap (the offsets come from the file).
bool fits(std::uint64_t at, std::uint64_t n, std::uint64_t size) {
  return at <= size && n <= size - at;
}

// Deflate cannot expand its input by more than about 1032 to 1 (RFC 1951's longest match per
// bit), so a member claiming more is damaged, whatever memory the machine has.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::string inflate_member(std::string_view in, std::uint64_t usize, const std::string& where) {
  if (usize > saturating_add(saturating_mul(in.size(), kMaxDeflateRatio), 64)) {
    fail(where, "declares " + std::to_string(usize) + " bytes inflated from " +
                    std::to_string(in.size()) + " compressed (deflate expands at most " +
                    std::to_string(kMaxDeflateRatio) + "x)");
  }
  check_memory(usize, "inflating " + where + " (" + std::to_string(usize) + " bytes)");
  std::string out(usize, '\0');
  z_stream s{};
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) fail(where, "zlib: inflateInit2 failed");
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  int rc = Z_OK;
  // zlib counts in 32-bit uInt: feed and drain in pieces below 1 GiB.
  std::uint64_t in_left = in.size(), out_left = usize;
  while (rc == Z_OK) {
    if (s.avail_in == 0 && in_left > 0) {
      s.avail_in = static_cast<uInt>(std::min<std::uint64_t>(in_left, 1u << 30));
      in_left -= s.avail_in;
    }
    if (s.avail_out == 0 && out_left > 0) {
      s.avail_out = static_cast<uInt>(std::min<std::uint64_t>(out_left, 1u << 30));
      out_left -= s.avail_out;
    }
    rc = inflate(&s, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && s.avail_in == 0 && in_left == 0) break;
  }
  const auto produced = s.total_out;
  inflateEnd(&s);
  if (rc != Z_STREAM_END || produced != usize) fail(where, "corrupt deflate data");
  return out;
}

}  // namespace

std::uint64_t read_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::map<std::string, std::string> read_zip_members(std::string_view z, const std::string& path) {
  // End of central directory: the last "PK\5\6" within the final 64 KiB + 22 bytes.
  if (z.size() < 22) fail(path, "not a zip archive (" + std::to_string(z.size()) + " bytes)");
  std::size_t eocd = std::string_view::npos;
  for (std::size_t i = z.size() - 22 + 1; i-- > 0 && z.size() - i <= 65557;) {
    if (z.compare(i, 4, "PK\x05\x06") == 0) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::string_view::npos) fail(path, "not a zip archive (no end of directory)");
  std::uint64_t count = read_le(z.data() + eocd + 10, 2);
  std::uint64_t dir = read_le(z.data() + eocd + 16, 4);
  if (dir == 0xffffffffu && eocd >= 20 && z.compare(eocd - 20, 4, "PK\x06\x07") == 0) {
    const std::uint64_t rec = read_le(z.data() + eocd - 20 + 8, 8);
    if (!fits(rec, 56, z.size()) || z.compare(rec, 4, "PK\x06\x06") != 0)
      fail(path, "zip64 end record at byte " + std::to_string(rec) + " is not inside the " +
                     std::to_string(z.size()) + " bytes of the file");
    count = read_le(z.data() + rec + 32, 8);
    dir = read_le(z.data() + rec + 48, 8);
  }
  if (count > z.size() / 46) {  // a directory entry takes at least 46 bytes
    fail(path, "zip directory declares " + std::to_string(count) + " entries, the file of " +
                   std::to_string(z.size()) + " bytes holds at most " +
                   std::to_string(z.size() / 46));
  }
  std::map<std::string, std::string> members;
  std::uint64_t at = dir;
  for (std::uint64_t e = 0; e < count; ++e) {
    if (!fits(at, 46, z.size()) || z.compare(at, 4, "PK\x01\x02") != 0)
      fail(path, "zip directory entry " + std::to_string(e) + " at byte " + std::to_string(at) +
                     " is damaged or past the end (" + std::to_string(z.size()) + " bytes)");
    const char* h = z.data() + at;
    const auto method = read_le(h + 10, 2);
    std::uint64_t csize = read_le(h + 20, 4), usize = read_le(h + 24, 4),
                  offset = read_le(h + 42, 4);
    const auto name_len = read_le(h + 28, 2), extra_len = read_le(h + 30, 2),
               comment_len = read_le(h + 32, 2);
    if (!fits(at + 46, name_len + extra_len, z.size())) fail(path, "zip directory is truncated");
    const std::string name(h + 46, name_len);
    const std::string where = path + ": member '" + name + "'";
    // zip64: the 0xffffffff fields follow in the extra block, in this order.
    for (std::uint64_t x = 0; x + 4 <= extra_len;) {
      const char* f = h + 46 + name_len + x;
      const auto id = read_le(f, 2), len = read_le(f + 2, 2);
      if (x + 4 + len > extra_len) fail(where, "zip extra field overruns its entry");
      if (id == 1) {
        std::uint64_t p = 4;
        for (std::uint64_t* v : {&usize, &csize, &offset}) {
          if (*v == 0xffffffffu && p + 8 <= 4 + len) {
            *v = read_le(f + p, 8);
            p += 8;
          }
        }
      }
      x += 4 + len;
    }
    if (!fits(offset, 30, z.size()) || z.compare(offset, 4, "PK\x03\x04") != 0)
      fail(where, "local header at byte " + std::to_string(offset) + " is damaged or past the end");
    const std::uint64_t start =
        offset + 30 + read_le(z.data() + offset + 26, 2) + read_le(z.data() + offset + 28, 2);
    if (!fits(start, csize, z.size()))
      fail(where, std::to_string(csize) + " bytes at byte " + std::to_string(start) +
                      " run past the end of the file (" + std::to_string(z.size()) + " bytes)");
    const std::string_view body = z.substr(start, csize);
    std::string out;
    if (method == 0) {
      if (usize != csize)
        fail(where, "stored member of " + std::to_string(csize) + " bytes declares " +
                        std::to_string(usize) + " bytes");
      out.assign(body);
    } else if (method == 8) {
      out = inflate_member(body, usize, where);
    } else {
      fail(where, "zip method " + std::to_string(method) + " (only stored and deflate)");
    }
    const auto crc = crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size());
    if (crc != read_le(h + 16, 4)) fail(where, "CRC mismatch");
    members[name] = std::move(out);
    at += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

}  // namespace hetsgd::datasets
