/// \file core/byte_cursor.h
/// Little-endian fixed-width fields appended to a byte string, and read back from one with
/// every count held to the bytes left: the sections the model file carries beside the
/// network's parameters (core/forest/, core/linear/) are written and parsed with them.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/resident.h"

namespace hetsgd {

/// Appends `v`'s bytes to `out`.
template <class T>
void put_bytes(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}
/// Appends the bytes of every element of `v` to `out`.
template <class T>
void put_array(std::string* out, const std::vector<T>& v) {
  out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// Reads fields in order from `bytes`; a field past the end throws IoError naming `name`, the
/// section and the field.
class ByteCursor {
 public:
  ByteCursor(std::string_view bytes, const std::string& name, const char* section)
      : bytes_(bytes), name_(name), section_(section) {}
  template <class T>
  void get_array(std::vector<T>* v, std::int64_t n, const char* field) {
    const std::size_t need = static_cast<std::size_t>(n) * sizeof(T);
    // n is held to the section's size before `need` is trusted: a corrupt count could
    // otherwise wrap the product round to a small number and pass the last test.
    if (n < 0 || static_cast<std::size_t>(n) > bytes_.size() || pos_ + need > bytes_.size()) {
      fail(std::string(field) + " needs " + std::to_string(n) + " entries past byte " +
           std::to_string(pos_) + ", the section has " + std::to_string(bytes_.size()) + " bytes");
    }
    resize_resident(v, static_cast<std::size_t>(n));  // a model's arrays: tens of MB
    if (need > 0) std::memcpy(v->data(), bytes_.data() + pos_, need);
    pos_ += need;
  }
  template <class T>
  T get(const char* field) {
    std::vector<T> one;
    get_array(&one, 1, field);
    return one[0];
  }
  std::size_t pos() const { return pos_; }
  std::size_t left() const { return bytes_.size() - pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(name_ + ": " + section_ + " section: " + what);
  }

 private:
  std::string_view bytes_;
  const std::string& name_;
  const char* section_;
  std::size_t pos_ = 0;
};

}  // namespace hetsgd
