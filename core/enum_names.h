/// \file core/enum_names.h
/// One name table per enumeration: the single place its spelling lives. The parsers, the
/// command line (which binds the enum directly and lists the choices on a bad value), `--help`
/// and to_string() all read the same table, so they cannot disagree.
///
/// An enumeration opts in by specialising name_table<E>() next to its declaration.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace hetsgd {

/// (name, value) pairs of an enumeration, in the order --help lists them.
template <class E>
using NameTable = std::vector<std::pair<std::string, E>>;

/// The table of E; specialised for every enumeration that has text names.
template <class E>
const NameTable<E>& name_table();

/// "a, b or c": the choices of E, for messages.
template <class E>
std::string enum_choices() {
  const NameTable<E>& t = name_table<E>();
  std::string out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i > 0) out += i + 1 == t.size() ? " or " : ", ";
    out += t[i].first;
  }
  return out;
}

/// The value named `text`. Throws InvalidArgument "unknown <what> '<text>' (expected ...)".
template <class E>
E parse_enum(const std::string& text, const char* what) {
  for (const auto& [name, value] : name_table<E>()) {
    if (name == text) return value;
  }
  throw InvalidArgument("unknown " + std::string(what) + " '" + text + "' (expected " +
                        enum_choices<E>() + ")");
}

/// The name of `value` ("?" for a value outside the table).
template <class E>
const char* enum_name(E value) {
  for (const auto& [name, v] : name_table<E>()) {
    if (v == value) return name.c_str();
  }
  return "?";
}

}  // namespace hetsgd
