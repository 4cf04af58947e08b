#include "datasets/npz_format.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"

namespace hetsgd::datasets {
namespace {

std::uint64_t le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void put(std::string* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what);
}

// The members of a zip archive, by name, inflated. Only what numpy and scipy write is read:
// methods 0 (stored) and 8 (deflate), zip64 sizes and offsets in the extra field.
std::map<std::string, std::string> unzip(std::string_view z, const std::string& path) {
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
  std::uint64_t count = le(z.data() + eocd + 10, 2);
  std::uint64_t dir = le(z.data() + eocd + 16, 4);
  if (dir == 0xffffffffu && eocd >= 20 && z.compare(eocd - 20, 4, "PK\x06\x07") == 0) {
    const std::uint64_t rec = le(z.data() + eocd - 20 + 8, 8);
    if (rec + 56 > z.size() || z.compare(rec, 4, "PK\x06\x06") != 0) fail(path, "bad zip64 end");
    count = le(z.data() + rec + 32, 8);
    dir = le(z.data() + rec + 48, 8);
  }
  std::map<std::string, std::string> members;
  std::uint64_t at = dir;
  for (std::uint64_t e = 0; e < count; ++e) {
    if (at + 46 > z.size() || z.compare(at, 4, "PK\x01\x02") != 0)
      fail(path, "zip directory entry " + std::to_string(e) + " is damaged");
    const char* h = z.data() + at;
    const auto method = le(h + 10, 2);
    std::uint64_t csize = le(h + 20, 4), usize = le(h + 24, 4), offset = le(h + 42, 4);
    const auto name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    if (at + 46 + name_len + extra_len > z.size()) fail(path, "zip directory is truncated");
    const std::string name(h + 46, name_len);
    // zip64: the 0xffffffff fields follow in the extra block, in this order.
    for (std::uint64_t x = 0; x + 4 <= extra_len;) {
      const char* f = h + 46 + name_len + x;
      const auto id = le(f, 2), len = le(f + 2, 2);
      if (id == 1) {
        std::uint64_t p = 4;
        for (std::uint64_t* v : {&usize, &csize, &offset}) {
          if (*v == 0xffffffffu && p + 8 <= 4 + len) {
            *v = le(f + p, 8);
            p += 8;
          }
        }
      }
      x += 4 + len;
    }
    if (offset + 30 > z.size() || z.compare(offset, 4, "PK\x03\x04") != 0)
      fail(path, name + ": damaged local header");
    const std::uint64_t start =
        offset + 30 + le(z.data() + offset + 26, 2) + le(z.data() + offset + 28, 2);
    if (start + csize > z.size() || start + csize < start) fail(path, name + ": truncated");
    std::string out;
    if (method == 0) {
      out.assign(z.data() + start, csize);
    } else if (method == 8) {
      if (usize > (std::uint64_t{1} << 40)) fail(path, name + ": implausible size");
      out.resize(usize);
      z_stream s{};
      if (inflateInit2(&s, -MAX_WBITS) != Z_OK) fail(path, "zlib: inflateInit2 failed");
      s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data() + start));
      s.next_out = reinterpret_cast<Bytef*>(out.data());
      int rc = Z_OK;
      // zlib counts in 32-bit uInt: feed and drain in pieces below 1 GiB.
      std::uint64_t in_left = csize, out_left = usize;
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
      if (rc != Z_STREAM_END || produced != usize) fail(path, name + ": corrupt deflate data");
    } else {
      fail(path, name + ": zip method " + std::to_string(method) + " (only stored and deflate)");
    }
    const auto crc = crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size());
    if (crc != le(h + 16, 4)) fail(path, name + ": CRC mismatch");
    members[name] = std::move(out);
    at += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

// One .npy member: its dtype text ("<f4"), shape, and the raw little-endian bytes.
struct Npy {
  std::string descr;
  std::vector<std::uint64_t> shape;
  std::string_view bytes;
};

Npy parse_npy(const std::string& blob, const std::string& where) {
  if (blob.size() < 10 || blob.compare(0, 6, "\x93NUMPY") != 0) fail(where, "not a .npy array");
  const int major = static_cast<unsigned char>(blob[6]);
  const std::size_t hl = major == 1 ? le(&blob[8], 2) : le(&blob[8], 4);
  const std::size_t start = (major == 1 ? 10 : 12) + hl;
  if (start > blob.size()) fail(where, "truncated .npy header");
  const std::string header = blob.substr(major == 1 ? 10 : 12, hl);
  Npy n;
  auto value_of = [&](const std::string& key) {
    const auto k = header.find("'" + key + "'");
    if (k == std::string::npos) fail(where, "npy header lacks '" + key + "'");
    return header.substr(header.find(':', k) + 1);
  };
  const std::string d = value_of("descr");
  n.descr = d.substr(d.find('\'') + 1, d.find('\'', d.find('\'') + 1) - d.find('\'') - 1);
  if (value_of("fortran_order").find("True") < value_of("fortran_order").find(','))
    fail(where, "Fortran-ordered arrays are not read");
  const std::string s = value_of("shape");
  const std::string dims = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
  for (std::size_t p = 0; p < dims.size();) {
    const std::size_t q = dims.find(',', p);
    const std::string t = dims.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (t.find_first_not_of(" ") != std::string::npos) n.shape.push_back(std::stoull(t));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  n.bytes = std::string_view(blob).substr(start);
  return n;
}

template <typename T>
std::vector<T> numbers(const Npy& n, const std::string& where) {
  std::uint64_t count = 1;
  for (std::uint64_t s : n.shape) count *= s;
  const char kind = n.descr.size() == 3 ? n.descr[1] : '?';
  const int size = n.descr.size() == 3 ? n.descr[2] - '0' : 0;
  if (n.descr.size() != 3 || (n.descr[0] != '<' && n.descr[0] != '|') ||
      !((kind == 'f' && (size == 4 || size == 8)) || (kind == 'i' && (size == 4 || size == 8))))
    fail(where, "dtype '" + n.descr + "' (expected little-endian float32/64 or int32/64)");
  if (n.bytes.size() < count * static_cast<std::uint64_t>(size))
    fail(where, "holds " + std::to_string(n.bytes.size()) + " bytes for " + std::to_string(count) +
                    " values");
  std::vector<T> out(count);
  const char* p = n.bytes.data();
  for (std::uint64_t i = 0; i < count; ++i, p += size) {
    if (kind == 'f') {
      double v;
      if (size == 4) {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
      } else {
        std::memcpy(&v, p, 8);
      }
      out[i] = static_cast<T>(v);
    } else {
      const std::int64_t v =
          size == 4 ? static_cast<std::int32_t>(le(p, 4)) : static_cast<std::int64_t>(le(p, 8));
      if constexpr (!std::is_floating_point_v<T>) {
        if (v < 0 || v > std::numeric_limits<T>::max())
          fail(where, "[" + std::to_string(i) + "] = " + std::to_string(v) + " out of range");
      }
      out[i] = static_cast<T>(v);
    }
  }
  return out;
}

std::string npy(const std::string& descr, const std::string& shape, const void* data,
                std::size_t bytes) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  put(&out, h.size(), 2);
  out += h;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

}  // namespace

NpzCsr read_npz(const std::string& path) {
  const MappedFile file(path);
  std::map<std::string, std::string> m = unzip(file.view(), path);
  auto member = [&](const std::string& name) {
    const auto it = m.find(name + ".npy");
    if (it == m.end()) fail(path, "no '" + name + "' array (not a scipy.sparse .npz)");
    return parse_npy(it->second, path + ": " + name);
  };
  const Npy format = member("format");
  std::string fmt;  // '<U3' 'csr' as UTF-32, or '|S3'
  for (std::size_t i = 0; i < format.bytes.size(); i += format.descr[1] == 'U' ? 4 : 1)
    fmt.push_back(format.bytes[i]);
  if (fmt.find("csr") != 0)
    fail(path, "format '" + fmt + "': only CSR matrices are read (save X.tocsr())");
  NpzCsr c;
  const auto shape = numbers<index_t>(member("shape"), path + ": shape");
  if (shape.size() != 2) fail(path, "shape has " + std::to_string(shape.size()) + " entries");
  c.rows = shape[0];
  c.cols = shape[1];
  c.indptr = numbers<index_t>(member("indptr"), path + ": indptr");
  c.indices = numbers<col_t>(member("indices"), path + ": indices");
  c.data = numbers<float>(member("data"), path + ": data");
  if (static_cast<index_t>(c.indptr.size()) != c.rows + 1 || c.data.size() != c.indices.size())
    fail(path, "indptr has " + std::to_string(c.indptr.size()) + " entries for " +
                   std::to_string(c.rows) + " rows, " + std::to_string(c.data.size()) +
                   " values for " + std::to_string(c.indices.size()) + " indices");
  return c;
}

void write_npz(const std::string& path, const NpzCsr& m, bool compressed) {
  std::vector<std::int64_t> indptr(m.indptr.begin(), m.indptr.end());
  const std::int64_t shape[2] = {m.rows, m.cols};
  const char32_t csr[3] = {U'c', U's', U'r'};
  const std::string n = std::to_string(m.indices.size());
  const std::pair<std::string, std::string> arrays[] = {
      {"indices.npy", npy("<i4", "(" + n + ",)", m.indices.data(), m.indices.size() * 4)},
      {"indptr.npy",
       npy("<i8", "(" + std::to_string(indptr.size()) + ",)", indptr.data(), indptr.size() * 8)},
      {"format.npy", npy("<U3", "()", csr, sizeof csr)},
      {"shape.npy", npy("<i8", "(2,)", shape, sizeof shape)},
      {"data.npy", npy("<f4", "(" + n + ",)", m.data.data(), m.data.size() * 4)}};
  std::string zip, dir;
  for (const auto& [name, raw] : arrays) {
    std::string body = raw;
    if (compressed) {
      z_stream s{};
      deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      body.resize(deflateBound(&s, raw.size()));
      s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
      s.avail_in = static_cast<uInt>(raw.size());
      s.next_out = reinterpret_cast<Bytef*>(body.data());
      s.avail_out = static_cast<uInt>(body.size());
      const int rc = deflate(&s, Z_FINISH);
      body.resize(s.total_out);
      deflateEnd(&s);
      if (rc != Z_STREAM_END) fail(path, "zlib: deflate failed");
    }
    HETSGD_CHECK(zip.size() + body.size() < 0xffffffffu,
                 path << ": more than 4 GiB (zip64 is not written)");
    const auto crc = crc32_z(0L, reinterpret_cast<const Bytef*>(raw.data()), raw.size());
    std::string common;
    put(&common, 20, 2);                  // version needed
    put(&common, 0, 2);                   // flags
    put(&common, compressed ? 8 : 0, 2);  // method
    put(&common, 0, 4);                   // time, date
    put(&common, crc, 4);
    put(&common, body.size(), 4);
    put(&common, raw.size(), 4);
    put(&common, name.size(), 2);
    put(&common, 0, 2);  // extra
    dir += "PK\x01\x02";
    put(&dir, 20, 2);  // made by
    dir += common;
    put(&dir, 0, 6);  // comment length, disk, internal attributes
    put(&dir, 0, 4);  // external attributes
    put(&dir, zip.size(), 4);
    dir += name;
    zip += "PK\x03\x04" + common + name + body;
  }
  std::string end = "PK\x05\x06";
  put(&end, 0, 4);
  put(&end, 5, 2);
  put(&end, 5, 2);
  put(&end, dir.size(), 4);
  put(&end, zip.size(), 4);
  put(&end, 0, 2);
  write_file_atomic(path, zip + dir + end);
}

Dataset read_npz_pair(const std::string& features_path, const std::string& labels_path) {
  NpzCsr x = read_npz(features_path);
  NpzCsr y = read_npz(labels_path);
  if (x.rows != y.rows)
    throw IoError(features_path + " has " + std::to_string(x.rows) + " rows, " + labels_path + " " +
                  std::to_string(y.rows));
  Dataset d;
  d.num_features = x.cols;
  d.num_labels = y.cols;
  d.x_indptr = std::move(x.indptr);
  d.x_indices = std::move(x.indices);
  d.x_values = std::move(x.data);
  d.y_indptr = std::move(y.indptr);
  d.y_indices = std::move(y.indices);
  try {
    d.validate(features_path + " + " + labels_path);
  } catch (const InvalidArgument& e) {
    throw IoError(e.what());
  }
  return d;
}

void write_npz_pair(const Dataset& d, const std::string& features_path,
                    const std::string& labels_path, bool compressed) {
  NpzCsr x{d.rows(), d.num_features, d.x_indptr, d.x_indices, d.x_values};
  write_npz(features_path, x, compressed);
  NpzCsr y{d.rows(), d.num_labels, d.y_indptr, d.y_indices,
           std::vector<float>(d.y_indices.size(), 1.0f)};
  write_npz(labels_path, y, compressed);
}

}  // namespace hetsgd::datasets
