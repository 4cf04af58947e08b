#include "core/tenancy/jobs_file.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace hetsgd::tenancy {
namespace {

using nlohmann::json;

// Every error of this reader goes through here so that the file and JSON path lead the message.
[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& what) {
  throw InvalidArgument(file + ": " + (path.empty() ? "/" : path) + ": " + what);
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

double get_number(const std::string& file, const std::string& path, const json& v) {
  if (!v.is_number()) fail(file, path, "expected a number, got " + shown(v));
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(file, path, "expected a finite number, got " + shown(v));
  return x;
}

// A number within [lo, hi]; the bounds keep absurd values (1e308 samples/s, a weight of 1e-300)
// out of the LPs, where they would only produce solver noise.
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

// Refuses duplicate keys while parsing (nlohmann keeps the last one silently), naming the JSON
// path of the second occurrence.
// The position is shared (the parser copies its callback), so the JSON path of a value the lexer
// rejects, e.g. a number overflowing a double, can be named after the parser threw.
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(std::string file)
      : file_(std::move(file)), frames_(std::make_shared<std::vector<Frame>>()) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
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

int get_int(const std::string& file, const std::string& path, const json& v, int lo,
            int hi = 1000000000) {
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

JobSpec parse_job(const std::string& file, const std::string& path, const json& j) {
  if (!j.is_object()) fail(file, path, "expected an object, got " + shown(j));
  JobSpec job;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = path + "/" + it.key();
    if (it.key() == "data") {
      job.data = get_string(file, p, it.value());
    } else if (it.key() == "algorithm") {
      job.algorithm = get_string(file, p, it.value());
    } else if (it.key() == "hidden") {
      if (!it.value().is_array())
        fail(file, p, "expected an array of sizes, got " + shown(it.value()));
      for (std::size_t k = 0; k < it.value().size(); ++k) {
        job.hidden.push_back(get_int(file, p + "/" + std::to_string(k), it.value()[k], 1));
      }
    } else if (it.key() == "options") {
      if (!it.value().is_object()) fail(file, p, "expected an object, got " + shown(it.value()));
      for (auto o = it.value().begin(); o != it.value().end(); ++o) {
        job.options[o.key()] =
            o.value().is_string() ? o.value().get<std::string>() : o.value().dump();
        job.option_paths[o.key()] = p + "/" + o.key();
      }
    } else {
      // Free-form: anything else a job needs (lr, epochs, devices policy ...) as text.
      job.options[it.key()] =
          it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
      job.option_paths[it.key()] = p;
    }
  }
  if (job.data.empty())
    fail(file, path + "/data", "missing (a dataset path or synthetic:<preset>)");
  return job;
}

}  // namespace

JobsFile parse_jobs_file(const std::string& text, const std::string& name) {
  json root;
  const DuplicateKeyCheck check(name);
  try {
    root = json::parse(text, check);
  } catch (const json::out_of_range& e) {
    fail(name, check.path(), std::string("number out of range: ") + e.what());
  } catch (const json::parse_error& e) {
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
    throw IoError(name + ":" + std::to_string(line) + ":" + std::to_string(col) +
                  ": JSON syntax error: " + e.what());
  }
  if (!root.is_object()) fail(name, "", "expected a JSON object at the top level");
  check_keys(name, "", root, {"round_seconds", "device_types", "tenants", "throughput", "comment"});
  JobsFile f;
  f.path = name;
  if (root.contains("round_seconds")) {
    f.round_seconds = get_bounded(name, "/round_seconds", root["round_seconds"], kMinRoundSeconds,
                                  kMaxRoundSeconds, "seconds");
  }
  // Device types.
  if (!root.contains("device_types"))
    fail(name, "/device_types", "missing (a list, or \"present\")");
  const json& dt = root["device_types"];
  if (dt.is_string() && dt.get<std::string>() == "present") {
    f.types_from_present = true;
  } else if (dt.is_array()) {
    if (dt.empty()) fail(name, "/device_types", "empty: there are no devices to share");
    std::set<std::string> names;
    for (std::size_t k = 0; k < dt.size(); ++k) {
      const std::string p = "/device_types/" + std::to_string(k);
      const json& t = dt[k];
      if (!t.is_object()) fail(name, p, "expected an object, got " + shown(t));
      check_keys(name, p, t, {"name", "count", "devices"});
      DeviceTypeSpec spec;
      if (!t.contains("name")) fail(name, p + "/name", "missing");
      spec.name = get_string(name, p + "/name", t["name"]);
      if (!names.insert(spec.name).second)
        fail(name, p + "/name", "duplicate type '" + spec.name + "'");
      if (t.contains("devices")) {
        const json& devs = t["devices"];
        if (!devs.is_array() || devs.empty()) {
          fail(name, p + "/devices", "expected a non-empty array of devices, got " + shown(devs));
        }
        for (std::size_t d = 0; d < devs.size(); ++d) {
          const std::string dp = p + "/devices/" + std::to_string(d);
          try {
            spec.devices.push_back(parse_device_id(get_string(name, dp, devs[d])));
          } catch (const InvalidArgument& e) {
            if (std::string(e.what()).rfind(name + ":", 0) == 0) throw;
            fail(name, dp, e.what());
          }
        }
        spec.count = static_cast<int>(spec.devices.size());
        if (t.contains("count") &&
            get_int(name, p + "/count", t["count"], 1, kMaxDevicesPerType) != spec.count) {
          fail(name, p + "/count",
               "is " + shown(t["count"]) + " but " + std::to_string(spec.count) +
                   " devices are listed");
        }
      } else if (t.contains("count")) {
        spec.count = get_int(name, p + "/count", t["count"], 1, kMaxDevicesPerType);
      } else {
        fail(name, p, "needs \"devices\" or \"count\"");
      }
      f.types.push_back(std::move(spec));
    }
  } else {
    fail(name, "/device_types", "expected a list of types or \"present\", got " + shown(dt));
  }
  // Tenants.
  if (!root.contains("tenants")) fail(name, "/tenants", "missing");
  const json& ts = root["tenants"];
  if (!ts.is_array() || ts.empty())
    fail(name, "/tenants", "expected a non-empty array, got " + shown(ts));
  std::set<std::string> tenant_names;
  for (std::size_t k = 0; k < ts.size(); ++k) {
    const std::string p = "/tenants/" + std::to_string(k);
    const json& t = ts[k];
    if (!t.is_object()) fail(name, p, "expected an object, got " + shown(t));
    check_keys(name, p, t,
               {"name", "weight", "job", "arrive_round", "leave_round", "emulated_speed"});
    TenantSpec spec;
    if (!t.contains("name")) fail(name, p + "/name", "missing");
    spec.name = get_string(name, p + "/name", t["name"]);
    if (!tenant_names.insert(spec.name).second)
      fail(name, p + "/name", "duplicate tenant '" + spec.name + "'");
    if (t.contains("weight")) {
      spec.weight =
          get_bounded(name, p + "/weight", t["weight"], kMinWeight, kMaxWeight, "a weight");
    }
    if (!t.contains("job")) fail(name, p + "/job", "missing");
    spec.job = parse_job(name, p + "/job", t["job"]);
    if (t.contains("arrive_round"))
      spec.arrive_round = get_int(name, p + "/arrive_round", t["arrive_round"], 0);
    if (t.contains("leave_round") && !t["leave_round"].is_null()) {
      spec.leave_round = get_int(name, p + "/leave_round", t["leave_round"], 0);
      if (spec.leave_round <= spec.arrive_round) {
        fail(name, p + "/leave_round",
             "is " + shown(t["leave_round"]) + ", not after arrive_round " +
                 std::to_string(spec.arrive_round));
      }
    }
    if (t.contains("emulated_speed")) {
      const json& es = t["emulated_speed"];
      if (!es.is_object()) fail(name, p + "/emulated_speed", "expected an object type -> factor");
      for (auto it = es.begin(); it != es.end(); ++it) {
        const std::string ep = p + "/emulated_speed/" + it.key();
        const double v = get_bounded(name, ep, it.value(), kMinEmulatedSpeed, 1.0, "a factor");
        if (!f.types_from_present) {
          bool known = false;
          for (const auto& ty : f.types) known = known || ty.name == it.key();
          if (!known) fail(name, ep, "no device type named '" + it.key() + "'");
        }
        spec.emulated_speed[it.key()] = v;
      }
    }
    f.tenants.push_back(std::move(spec));
  }
  // Throughput, as rows in file order or as {tenant: {type: value}}.
  if (root.contains("throughput")) {
    if (f.types_from_present) {
      fail(name, "/throughput", "needs explicit device_types (types are unknown with \"present\")");
    }
    const int n = static_cast<int>(f.tenants.size()), m = static_cast<int>(f.types.size());
    const json& th = root["throughput"];
    f.has_throughput = true;
    f.throughput = Matrix(n, m);
    auto put = [&](const std::string& p, const json& v, int i, int j) {
      const double x = get_bounded(name, p, v, 0.0, kMaxThroughput, "samples/s");
      if (x > 0 && x < kMinThroughput) {
        std::ostringstream os;
        os << "expected 0 (cannot run) or samples/s in [" << kMinThroughput << ", "
           << kMaxThroughput << "], got " << shown(v);
        fail(name, p, os.str());
      }
      f.throughput(i, j) = x;
    };
    if (th.is_array()) {
      if (static_cast<int>(th.size()) != n) {
        fail(name, "/throughput",
             "has " + std::to_string(th.size()) + " rows for " + std::to_string(n) + " tenants");
      }
      for (int i = 0; i < n; ++i) {
        const std::string p = "/throughput/" + std::to_string(i);
        if (!th[i].is_array() || static_cast<int>(th[i].size()) != m) {
          fail(name, p,
               "expected " + std::to_string(m) + " numbers (one per device type), got " +
                   shown(th[i]));
        }
        for (int j = 0; j < m; ++j) put(p + "/" + std::to_string(j), th[i][j], i, j);
      }
    } else if (th.is_object()) {
      for (int i = 0; i < n; ++i) {
        const std::string p = "/throughput/" + f.tenants[i].name;
        if (!th.contains(f.tenants[i].name)) fail(name, p, "missing (every tenant needs a row)");
        const json& row = th[f.tenants[i].name];
        if (!row.is_object())
          fail(name, p, "expected an object type -> samples/s, got " + shown(row));
        for (int j = 0; j < m; ++j) {
          if (!row.contains(f.types[j].name)) fail(name, p + "/" + f.types[j].name, "missing");
          put(p + "/" + f.types[j].name, row[f.types[j].name], i, j);
        }
        check_keys(name, p, row, [&] {
          std::set<std::string> k;
          for (const auto& t : f.types) k.insert(t.name);
          return k;
        }());
      }
      for (auto it = th.begin(); it != th.end(); ++it) {
        if (tenant_names.count(it.key()) == 0)
          fail(name, "/throughput/" + it.key(), "no tenant of that name");
      }
    } else {
      fail(name, "/throughput",
           "expected rows or an object tenant -> {type: samples/s}, got " + shown(th));
    }
    for (int i = 0; i < n; ++i) {
      double row_max = 0;
      for (int j = 0; j < m; ++j) row_max = std::max(row_max, f.throughput(i, j));
      if (row_max <= 0) {
        fail(name, "/throughput/" + (th.is_array() ? std::to_string(i) : f.tenants[i].name),
             "tenant '" + f.tenants[i].name +
                 "' has throughput 0 on every device type: its job can run nowhere (remove the "
                 "tenant or fix its row)");
      }
    }
  }
  return f;
}

JobsFile read_jobs_file(const std::string& path) {
  // Checked before opening: a FIFO would block the open, /dev/zero would never end.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    throw IoError(path + ": cannot open jobs file (no such file)");
  if (!std::filesystem::is_regular_file(st)) {
    const char* kind =
        std::filesystem::is_directory(st) ? "a directory"
        : std::filesystem::is_fifo(st)    ? "a FIFO"
        : std::filesystem::is_character_file(st) || std::filesystem::is_block_file(st)
            ? "a device"
            : "not a regular file";
    throw IoError(path + ": jobs file is " + std::string(kind) + "; expected a regular file");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxJobsFileBytes) {
    throw IoError(path + ": jobs file is " + std::to_string(size) + " bytes, more than the " +
                  std::to_string(kMaxJobsFileBytes) + " allowed");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open jobs file");
  // Read at most one byte past the limit: the file may grow after the size check.
  std::string text(kMaxJobsFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw IoError(path + ": read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxJobsFileBytes) {
    throw IoError(path + ": jobs file is more than " + std::to_string(kMaxJobsFileBytes) +
                  " bytes");
  }
  return parse_jobs_file(text, path);
}

std::vector<DeviceTypeSpec> types_from_devices(const std::vector<DeviceId>& devices,
                                               const std::vector<std::string>& names) {
  HETSGD_CHECK(!devices.empty(), "no devices present to share");
  HETSGD_CHECK(names.empty() || names.size() == devices.size(),
               names.size() << " type names for " << devices.size() << " devices");
  std::vector<DeviceTypeSpec> out;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    std::string key;
    if (!names.empty()) {
      key = names[d];
    } else {
      std::ostringstream os;
      os << (devices[d].kind == DeviceKind::kCpu ? "cpu" : "cuda");
      if (devices[d].emulated()) os << '@' << devices[d].speed;
      key = os.str();
    }
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const DeviceTypeSpec& t) { return t.name == key; });
    if (it == out.end()) {
      out.push_back(DeviceTypeSpec{key, 0, {}});
      it = out.end() - 1;
    }
    it->devices.push_back(devices[d]);
    it->count = static_cast<int>(it->devices.size());
  }
  return out;
}

std::vector<DeviceTypeSpec> resolve_types(const JobsFile& file,
                                          const std::vector<DeviceId>& present) {
  if (!file.types_from_present) return file.types;
  HETSGD_CHECK(!present.empty(),
               file.path << ": /device_types is \"present\" but no devices were given");
  return types_from_devices(present);
}

Instance make_instance(const JobsFile& file, const ProfileFn& profile,
                       const std::vector<DeviceId>& present) {
  const std::vector<DeviceTypeSpec> types = resolve_types(file, present);
  Instance inst;
  for (const auto& t : types) {
    inst.types.push_back(t.name);
    inst.counts.push_back(t.count);
  }
  for (const auto& t : file.tenants) {
    inst.tenants.push_back(t.name);
    inst.weights.push_back(t.weight);
  }
  const int n = inst.num_tenants(), m = inst.num_types();
  if (file.has_throughput) {
    inst.s = file.throughput;
  } else {
    HETSGD_CHECK(profile != nullptr, file.path << ": /throughput is not given and no profiler is "
                                                  "available to measure it");
    inst.s = Matrix(n, m);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < m; ++j) inst.s(i, j) = profile(i, inst.types[j]);
    }
  }
  for (int i = 0; i < n; ++i) {
    for (const auto& [type, factor] : file.tenants[i].emulated_speed) {
      const auto it = std::find(inst.types.begin(), inst.types.end(), type);
      HETSGD_CHECK(it != inst.types.end(), file.path << ": /tenants/" << i << "/emulated_speed/"
                                                     << type << ": no device type named '" << type
                                                     << "'");
      inst.s(i, static_cast<int>(it - inst.types.begin())) *= factor;
      inst.emulated = true;
    }
  }
  for (const auto& t : types) {
    for (const auto& d : t.devices) inst.emulated = inst.emulated || d.emulated();
  }
  try {
    validate(inst);
  } catch (const InvalidArgument& e) {
    // A profiled row of zeros (the job ran nowhere) is reported against the jobs file.
    throw InvalidArgument(file.path + ": " + e.what() +
                          (file.has_throughput ? "" : " (throughput measured by profiling)"));
  }
  return inst;
}

}  // namespace hetsgd::tenancy
