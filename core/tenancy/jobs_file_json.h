/// \file core/tenancy/jobs_file_json.h
/// The checked JSON reading under the jobs-file reader (jobs_file.cpp): parsing with duplicate
/// keys and excessive nesting refused, and typed getters whose errors lead with the file and the
/// JSON path of the bad value (`share.json: /tenants/1/weight: expected ...`). Internal to
/// core/tenancy.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace hetsgd::tenancy::jobs_json {

using nlohmann::json;

/// Deepest nesting of arrays and objects a jobs file may have. A real file nests four levels;
/// the bound keeps hostile files (200 KB of '[') from exhausting the stack in recursive code
/// such as destruction and printing.
inline constexpr int kMaxDepth = 32;

/// Throws InvalidArgument "<file>: <path>: <what>" (path "/" when empty).
[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& what);

/// `v` as JSON text, cut to 60 characters for messages.
std::string shown(const json& v);

/// Parses `text`: IoError "<file>:<line>:<col>: JSON syntax error: ..." for bad syntax;
/// InvalidArgument naming the JSON path for a duplicate key, nesting deeper than kMaxDepth, or a
/// number too large for a double.
json parse(const std::string& text, const std::string& file);

/// A finite number.
double get_number(const std::string& file, const std::string& path, const json& v);
/// A finite number in [lo, hi]; `what` names it in the message ("seconds", "a weight").
double get_bounded(const std::string& file, const std::string& path, const json& v, double lo,
                   double hi, const std::string& what);
/// An integer in [lo, hi].
int get_int(const std::string& file, const std::string& path, const json& v, int lo,
            int hi = 1000000000);
/// A non-empty string.
std::string get_string(const std::string& file, const std::string& path, const json& v);
/// Refuses a key of `obj` not in `known`, listing the known ones.
void check_keys(const std::string& file, const std::string& path, const json& obj,
                const std::set<std::string>& known);

}  // namespace hetsgd::tenancy::jobs_json
