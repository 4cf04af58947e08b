#include "datasets/npz_format.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/sparse_text.h"
#include "datasets/zip_reader.h"

namespace hetsgd::datasets {
namespace {

void put(std::string* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what);
}

// One .npy member: its dtype text ("<f4"), shape, and the raw little-endian bytes.
struct Npy {
  std::string descr;
  std::vector<std::uint64_t> shape;
  std::string_view bytes;
};

// The text after `'key':` in a .npy header (a Python dict literal), blanks skipped.
std::string_view value_of(std::string_view header, const std::string& key,
                          const std::string& where) {
  const std::size_t k = header.find("'" + key + "'");
  if (k == std::string_view::npos) fail(where, "npy header lacks '" + key + "'");
  std::size_t p = header.find_first_not_of(' ', k + key.size() + 2);
  if (p == std::string_view::npos || header[p] != ':')
    fail(where, "npy header: no ':' after '" + key + "'");
  p = header.find_first_not_of(' ', p + 1);
  return p == std::string_view::npos ? std::string_view() : header.substr(p);
}

Npy parse_npy(const std::string& blob, const std::string& where) {
  if (blob.size() < 10 || blob.compare(0, 6, "\x93NUMPY") != 0) fail(where, "not a .npy array");
  const int major = static_cast<unsigned char>(blob[6]);
  if (major < 1 || major > 3)
    fail(where, ".npy version " + std::to_string(major) + " (1, 2 and 3 are read)");
  const std::size_t pre = major == 1 ? 10 : 12;
  if (blob.size() < pre) fail(where, "truncated .npy header");
  const std::uint64_t hl = read_le(&blob[8], major == 1 ? 2 : 4);
  if (hl > blob.size() - pre)
    fail(where, ".npy header of " + std::to_string(hl) + " bytes, the member holds " +
                    std::to_string(blob.size()));
  const std::string_view header(blob.data() + pre, hl);
  Npy n;
  const std::string_view d = value_of(header, "descr", where);
  const std::size_t close = d.empty() ? std::string_view::npos : d.find(d[0], 1);
  if (d.empty() || (d[0] != '\'' && d[0] != '"') || close == std::string_view::npos)
    fail(where, "npy 'descr' is not a quoted dtype: '" + excerpt(d, 30) + "'");
  n.descr = std::string(d.substr(1, close - 1));
  if (value_of(header, "fortran_order", where).substr(0, 4) == "True")
    fail(where, "Fortran-ordered arrays are not read");
  const std::string_view s = value_of(header, "shape", where);
  const std::size_t s_end = s.find(')');
  if (s.empty() || s[0] != '(' || s_end == std::string_view::npos)
    fail(where, "npy 'shape' is not a tuple: '" + excerpt(s, 30) + "'");
  const std::string_view dims = s.substr(1, s_end - 1);
  for (std::size_t p = 0; p < dims.size();) {
    std::size_t q = dims.find(',', p);
    if (q == std::string_view::npos) q = dims.size();
    std::string_view t = dims.substr(p, q - p);
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    if (!t.empty()) {
      std::uint64_t v = 0;
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc() || r.ptr != t.data() + t.size())
        fail(where, "npy shape entry '" + excerpt(t, 30) + "' is not a non-negative integer");
      n.shape.push_back(v);
    }
    p = q + 1;
  }
  n.bytes = std::string_view(blob).substr(pre + hl);
  return n;
}

// The values of a 1-D array. Ids (integral T) must be stored as integers, as scipy writes
// them: a float array of ids would be truncated, so it is refused.
template <typename T>
std::vector<T> numbers(const Npy& n, const std::string& where) {
  constexpr bool ids = !std::is_floating_point_v<T>;
  const char kind = n.descr.size() == 3 ? n.descr[1] : '?';
  const int size = n.descr.size() == 3 ? n.descr[2] - '0' : 0;
  if (n.descr.size() != 3 || (n.descr[0] != '<' && n.descr[0] != '|') ||
      !((kind == 'f' && (size == 4 || size == 8)) || (kind == 'i' && (size == 4 || size == 8))))
    fail(where, "dtype '" + n.descr + "' (expected little-endian float32/64 or int32/64)");
  if (ids && kind != 'i')
    fail(where, "dtype '" + n.descr +
                    "': ids must be stored as int32 or int64 (as scipy "
                    "writes them), not as floats");
  if (n.shape.size() != 1)
    fail(where, std::to_string(n.shape.size()) + "-dimensional array (expected 1-D)");
  const std::uint64_t count = n.shape[0];
  if (count > n.bytes.size() / static_cast<std::uint64_t>(size) ||
      n.bytes.size() != count * static_cast<std::uint64_t>(size))
    fail(where, "holds " + std::to_string(n.bytes.size()) + " bytes for " + std::to_string(count) +
                    " values of " + std::to_string(size) + " bytes");
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
      const std::int64_t v = size == 4 ? static_cast<std::int32_t>(read_le(p, 4))
                                       : static_cast<std::int64_t>(read_le(p, 8));
      if constexpr (ids) {
        if (v < 0 || v > std::numeric_limits<T>::max())
          fail(where, "[" + std::to_string(i) + "] = " + std::to_string(v) + " outside [0, " +
                          std::to_string(std::numeric_limits<T>::max()) + "]");
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
  std::map<std::string, std::string> m = read_zip_members(file.view(), path);
  auto member = [&](const std::string& name) {
    const auto it = m.find(name + ".npy");
    if (it == m.end()) fail(path, "no '" + name + "' array (not a scipy.sparse .npz)");
    return parse_npy(it->second, path + ": " + name);
  };
  const Npy format = member("format");
  const char ftype = format.descr.size() >= 2 ? format.descr[1] : '?';
  if (ftype != 'U' && ftype != 'S')
    fail(path + ": format", "dtype '" + format.descr + "' (expected a string, '<U3' or '|S3')");
  std::string fmt;  // '<U3' 'csr' as UTF-32, or '|S3'
  for (std::size_t i = 0; i < format.bytes.size() && fmt.size() < 16; i += ftype == 'U' ? 4 : 1)
    fmt.push_back(format.bytes[i]);
  if (fmt.find("csr") != 0)
    fail(path, "format '" + fmt + "': only CSR matrices are read (save X.tocsr())");
  NpzCsr c;
  const auto shape = numbers<index_t>(member("shape"), path + ": shape");
  if (shape.size() != 2) fail(path, "shape has " + std::to_string(shape.size()) + " entries");
  // Column ids are col_t: the column count must fit in 32 bits.
  constexpr index_t kMaxCols = index_t{1} << 31;
  if (shape[1] > kMaxCols)
    fail(path + ": shape", "columns " + std::to_string(shape[1]) + " > 2^31");
  c.rows = shape[0];
  c.cols = shape[1];
  c.indptr = numbers<index_t>(member("indptr"), path + ": indptr");
  if (c.indptr.size() - 1 != static_cast<std::uint64_t>(c.rows))
    fail(path + ": indptr", std::to_string(c.indptr.size()) + " entries for shape[0] = " +
                                std::to_string(c.rows) + " rows (expected rows + 1)");
  c.indices = numbers<col_t>(member("indices"), path + ": indices");
  c.data = numbers<float>(member("data"), path + ": data");
  if (c.data.size() != c.indices.size())
    fail(path, "data has " + std::to_string(c.data.size()) + " values for " +
                   std::to_string(c.indices.size()) + " indices");
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
