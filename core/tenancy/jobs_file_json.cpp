#include "core/tenancy/jobs_file_json.h"

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace hetsgd::tenancy::jobs_json {

void fail(const std::string& file, const std::string& path, const std::string& what) {
  throw InvalidArgument(file + ": " + (path.empty() ? "/" : path) + ": " + what);
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

namespace {

// Watches the parse: refuses duplicate keys (nlohmann keeps the last one silently) and nesting
// deeper than kMaxDepth, naming the JSON path. The position is shared (the parser copies its
// callback), so the path of a value the lexer rejects, e.g. a number overflowing a double, can
// be named after the parser threw.
class ParseWatch {
 public:
  explicit ParseWatch(std::string file)
      : file_(std::move(file)), frames_(std::make_shared<std::vector<Frame>>()) {}

  bool operator()(int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxDepth) {
          fail(file_, path(),
               "nested deeper than " + std::to_string(kMaxDepth) + " levels of arrays/objects");
        }
        frames_->push_back({event == json::parse_event_t::array_start, {}, "", 0});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames_->back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) fail(file_, path(), "duplicate key");
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_->pop_back();
        next_element();
        break;
      case json::parse_event_t::value:
        next_element();
        break;
    }
    return true;
  }

  /// JSON path of the value being parsed.
  std::string path() const {
    std::string p;
    for (const Frame& f : *frames_) p += "/" + (f.array ? std::to_string(f.index) : f.key);
    return p;
  }

 private:
  struct Frame {
    bool array;
    std::set<std::string> keys;
    std::string key;
    std::size_t index;
  };
  void next_element() {
    if (!frames_->empty() && frames_->back().array) ++frames_->back().index;
  }

  std::string file_;
  std::shared_ptr<std::vector<Frame>> frames_;
};

// The offending token of a lexer message ("number overflow parsing '1e999'"), or "".
std::string quoted_token(const std::string& what) {
  const auto a = what.find('\''), b = what.rfind('\'');
  if (a == std::string::npos || b <= a) return "";
  const std::string token = what.substr(a + 1, b - a - 1);
  return token.size() > 40 ? token.substr(0, 37) + "..." : token;
}

[[noreturn]] void syntax_error(const std::string& text, const std::string& file,
                               const json::parse_error& e) {
  // Turn the byte offset into line:column, which is what an editor shows.
  std::size_t line = 1, col = 1;
  for (std::size_t b = 0; b + 1 < e.byte && b < text.size(); ++b) {
    if (text[b] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  throw IoError(file + ":" + std::to_string(line) + ":" + std::to_string(col) +
                ": JSON syntax error: " + e.what());
}

}  // namespace

json parse(const std::string& text, const std::string& file) {
  const ParseWatch watch(file);
  try {
    return json::parse(text, watch);
  } catch (const json::out_of_range& e) {
    // The library's own text ("[json.exception.out_of_range.406] ...") means nothing to a user.
    const std::string token = quoted_token(e.what());
    std::ostringstream os;
    os << "number " << (token.empty() ? "" : token + " ") << "is too large (beyond "
       << std::numeric_limits<double>::max() << ")";
    fail(file, watch.path(), os.str());
  } catch (const json::parse_error& e) {
    syntax_error(text, file, e);
  }
}

double get_number(const std::string& file, const std::string& path, const json& v) {
  if (!v.is_number()) fail(file, path, "expected a number, got " + shown(v));
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(file, path, "expected a finite number, got " + shown(v));
  return x;
}

// The bounds keep absurd values (1e308 samples/s, a weight of 1e-300) out of the LPs, where they
// would only produce solver noise.
double get_bounded(const std::string& file, const std::string& path, const json& v, double lo,
                   double hi, const std::string& what) {
  const double x = get_number(file, path, v);
  if (!(x >= lo && x <= hi)) {
    std::ostringstream os;
    os << "expected " << what << " in [" << lo << ", " << hi << "], got " << shown(v);
    fail(file, path, os.str());
  }
  return x;
}

int get_int(const std::string& file, const std::string& path, const json& v, int lo, int hi) {
  if (!v.is_number_integer()) fail(file, path, "expected an integer, got " + shown(v));
  // Unsigned values above the signed range would wrap in get<long long>().
  const bool too_big = v.is_number_unsigned() && v.get<unsigned long long>() > 1000000000ULL;
  const long long x = too_big ? static_cast<long long>(hi) + 1 : v.get<long long>();
  if (x < lo || x > hi) {
    fail(file, path,
         "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
             shown(v));
  }
  return static_cast<int>(x);
}

std::string get_string(const std::string& file, const std::string& path, const json& v) {
  if (!v.is_string() || v.get<std::string>().empty()) {
    fail(file, path, "expected a non-empty string, got " + shown(v));
  }
  return v.get<std::string>();
}

void check_keys(const std::string& file, const std::string& path, const json& obj,
                const std::set<std::string>& known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (known.count(it.key()) == 0) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(file, path + "/" + it.key(), "unknown key (known: " + list + ")");
    }
  }
}

}  // namespace hetsgd::tenancy::jobs_json
