#include "core/tenancy/jobs_file.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/tenancy/jobs_file_json.h"

namespace hetsgd::tenancy {
namespace {

using namespace jobs_json;  // NOLINT(google-build-using-namespace): the reader's vocabulary

// A value of `options` (or a free-form job key) as the text the engine's parser reads.
std::string option_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void parse_job_field(const std::string& file, const std::string& p, const std::string& key,
                     const json& v, JobSpec* job) {
  if (key == "data") {
    job->data = get_string(file, p, v);
  } else if (key == "algorithm") {
    job->algorithm = get_string(file, p, v);
  } else if (key == "hidden") {
    if (!v.is_array()) fail(file, p, "expected an array of sizes, got " + shown(v));
    for (std::size_t k = 0; k < v.size(); ++k) {
      job->hidden.push_back(get_int(file, p + "/" + std::to_string(k), v[k], 1));
    }
  } else if (key == "options") {
    if (!v.is_object()) fail(file, p, "expected an object, got " + shown(v));
    for (auto o = v.begin(); o != v.end(); ++o) {
      job->options[o.key()] = option_text(o.value());
      job->option_paths[o.key()] = p + "/" + o.key();
    }
  } else {
    // Free-form: anything else a job needs (lr, epochs, devices policy ...) as text.
    job->options[key] = option_text(v);
    job->option_paths[key] = p;
  }
}

JobSpec parse_job(const std::string& file, const std::string& path, const json& j) {
  if (!j.is_object()) fail(file, path, "expected an object, got " + shown(j));
  JobSpec job;
  for (auto it = j.begin(); it != j.end(); ++it) {
    parse_job_field(file, path + "/" + it.key(), it.key(), it.value(), &job);
  }
  if (job.data.empty()) {
    fail(file, path + "/data", "missing (a dataset path or synthetic:<preset>)");
  }
  return job;
}

std::vector<DeviceId> parse_devices(const std::string& file, const std::string& p,
                                    const json& devs) {
  if (!devs.is_array() || devs.empty()) {
    fail(file, p, "expected a non-empty array of devices, got " + shown(devs));
  }
  std::vector<DeviceId> out;
  for (std::size_t d = 0; d < devs.size(); ++d) {
    const std::string dp = p + "/" + std::to_string(d);
    const std::string text = get_string(file, dp, devs[d]);
    try {
      out.push_back(parse_device_id(text));
    } catch (const InvalidArgument& e) {
      fail(file, dp, e.what());
    }
  }
  return out;
}

DeviceTypeSpec parse_device_type(const std::string& file, const std::string& p, const json& t) {
  if (!t.is_object()) fail(file, p, "expected an object, got " + shown(t));
  check_keys(file, p, t, {"name", "count", "devices"});
  DeviceTypeSpec spec;
  if (!t.contains("name")) fail(file, p + "/name", "missing");
  spec.name = get_string(file, p + "/name", t["name"]);
  if (t.contains("devices")) {
    spec.devices = parse_devices(file, p + "/devices", t["devices"]);
    spec.count = static_cast<int>(spec.devices.size());
    if (t.contains("count") &&
        get_int(file, p + "/count", t["count"], 1, kMaxDevicesPerType) != spec.count) {
      fail(
          file, p + "/count",
          "is " + shown(t["count"]) + " but " + std::to_string(spec.count) + " devices are listed");
    }
  } else if (t.contains("count")) {
    spec.count = get_int(file, p + "/count", t["count"], 1, kMaxDevicesPerType);
  } else {
    fail(file, p, "needs \"devices\" or \"count\"");
  }
  return spec;
}

void parse_device_types(const std::string& file, const json& root, JobsFile* f) {
  if (!root.contains("device_types")) {
    fail(file, "/device_types", "missing (a list, or \"present\")");
  }
  const json& dt = root["device_types"];
  if (dt.is_string() && dt.get<std::string>() == "present") {
    f->types_from_present = true;
    return;
  }
  if (!dt.is_array()) {
    fail(file, "/device_types", "expected a list of types or \"present\", got " + shown(dt));
  }
  if (dt.empty()) fail(file, "/device_types", "empty: there are no devices to share");
  std::set<std::string> names;
  for (std::size_t k = 0; k < dt.size(); ++k) {
    const std::string p = "/device_types/" + std::to_string(k);
    DeviceTypeSpec spec = parse_device_type(file, p, dt[k]);
    if (!names.insert(spec.name).second) {
      fail(file, p + "/name", "duplicate type '" + spec.name + "'");
    }
    f->types.push_back(std::move(spec));
  }
}

void parse_emulated_speed(const std::string& file, const std::string& p, const json& es,
                          const JobsFile& f, TenantSpec* spec) {
  if (!es.is_object()) fail(file, p, "expected an object type -> factor");
  for (auto it = es.begin(); it != es.end(); ++it) {
    const std::string ep = p + "/" + it.key();
    const double v = get_bounded(file, ep, it.value(), kMinEmulatedSpeed, 1.0, "a factor");
    if (!f.types_from_present) {
      const bool known = std::any_of(f.types.begin(), f.types.end(),
                                     [&](const DeviceTypeSpec& t) { return t.name == it.key(); });
      if (!known) fail(file, ep, "no device type named '" + it.key() + "'");
    }
    spec->emulated_speed[it.key()] = v;
  }
}

void parse_rounds(const std::string& file, const std::string& p, const json& t, TenantSpec* spec) {
  if (t.contains("arrive_round")) {
    spec->arrive_round = get_int(file, p + "/arrive_round", t["arrive_round"], 0);
  }
  if (t.contains("leave_round") && !t["leave_round"].is_null()) {
    spec->leave_round = get_int(file, p + "/leave_round", t["leave_round"], 0);
    if (spec->leave_round <= spec->arrive_round) {
      fail(file, p + "/leave_round",
           "is " + shown(t["leave_round"]) + ", not after arrive_round " +
               std::to_string(spec->arrive_round));
    }
  }
}

TenantSpec parse_tenant(const std::string& file, const std::string& p, const json& t,
                        const JobsFile& f) {
  if (!t.is_object()) fail(file, p, "expected an object, got " + shown(t));
  check_keys(file, p, t,
             {"name", "weight", "job", "arrive_round", "leave_round", "emulated_speed"});
  TenantSpec spec;
  if (!t.contains("name")) fail(file, p + "/name", "missing");
  spec.name = get_string(file, p + "/name", t["name"]);
  if (t.contains("weight")) {
    spec.weight = get_bounded(file, p + "/weight", t["weight"], kMinWeight, kMaxWeight, "a weight");
  }
  if (!t.contains("job")) fail(file, p + "/job", "missing");
  spec.job = parse_job(file, p + "/job", t["job"]);
  parse_rounds(file, p, t, &spec);
  if (t.contains("emulated_speed")) {
    parse_emulated_speed(file, p + "/emulated_speed", t["emulated_speed"], f, &spec);
  }
  return spec;
}

void parse_tenants(const std::string& file, const json& root, JobsFile* f) {
  if (!root.contains("tenants")) fail(file, "/tenants", "missing");
  const json& ts = root["tenants"];
  if (!ts.is_array() || ts.empty()) {
    fail(file, "/tenants", "expected a non-empty array, got " + shown(ts));
  }
  std::set<std::string> names;
  for (std::size_t k = 0; k < ts.size(); ++k) {
    const std::string p = "/tenants/" + std::to_string(k);
    TenantSpec spec = parse_tenant(file, p, ts[k], *f);
    if (!names.insert(spec.name).second) {
      fail(file, p + "/name", "duplicate tenant '" + spec.name + "'");
    }
    f->tenants.push_back(std::move(spec));
  }
}

void put_throughput(const std::string& file, const std::string& p, const json& v, int i, int j,
                    JobsFile* f) {
  const double x = get_bounded(file, p, v, 0.0, kMaxThroughput, "samples/s");
  if (x > 0 && x < kMinThroughput) {
    std::ostringstream os;
    os << "expected 0 (cannot run) or samples/s in [" << kMinThroughput << ", " << kMaxThroughput
       << "], got " << shown(v);
    fail(file, p, os.str());
  }
  f->throughput(i, j) = x;
}

void throughput_rows(const std::string& file, const json& th, JobsFile* f) {
  const int n = f->throughput.rows, m = f->throughput.cols;
  if (static_cast<int>(th.size()) != n) {
    fail(file, "/throughput",
         "has " + std::to_string(th.size()) + " rows for " + std::to_string(n) + " tenants");
  }
  for (int i = 0; i < n; ++i) {
    const std::string p = "/throughput/" + std::to_string(i);
    if (!th[i].is_array() || static_cast<int>(th[i].size()) != m) {
      fail(file, p,
           "expected " + std::to_string(m) + " numbers (one per device type), got " + shown(th[i]));
    }
    for (int j = 0; j < m; ++j)
      put_throughput(file, p + "/" + std::to_string(j), th[i][j], i, j, f);
  }
}

void throughput_object(const std::string& file, const json& th, JobsFile* f) {
  std::set<std::string> type_names, tenant_names;
  for (const auto& t : f->types) type_names.insert(t.name);
  for (std::size_t i = 0; i < f->tenants.size(); ++i) {
    const std::string& name = f->tenants[i].name;
    tenant_names.insert(name);
    const std::string p = "/throughput/" + name;
    if (!th.contains(name)) fail(file, p, "missing (every tenant needs a row)");
    const json& row = th[name];
    if (!row.is_object()) fail(file, p, "expected an object type -> samples/s, got " + shown(row));
    for (std::size_t j = 0; j < f->types.size(); ++j) {
      const std::string& type = f->types[j].name;
      if (!row.contains(type)) fail(file, p + "/" + type, "missing");
      put_throughput(file, p + "/" + type, row[type], static_cast<int>(i), static_cast<int>(j), f);
    }
    check_keys(file, p, row, type_names);
  }
  for (auto it = th.begin(); it != th.end(); ++it) {
    if (tenant_names.count(it.key()) == 0) {
      fail(file, "/throughput/" + it.key(), "no tenant of that name");
    }
  }
}

// Throughput, as rows in file order or as {tenant: {type: value}}.
void parse_throughput(const std::string& file, const json& root, JobsFile* f) {
  if (!root.contains("throughput")) return;
  if (f->types_from_present) {
    fail(file, "/throughput", "needs explicit device_types (types are unknown with \"present\")");
  }
  const json& th = root["throughput"];
  f->has_throughput = true;
  f->throughput = Matrix(static_cast<int>(f->tenants.size()), static_cast<int>(f->types.size()));
  if (th.is_array()) {
    throughput_rows(file, th, f);
  } else if (th.is_object()) {
    throughput_object(file, th, f);
  } else {
    fail(file, "/throughput",
         "expected rows or an object tenant -> {type: samples/s}, got " + shown(th));
  }
  for (int i = 0; i < f->throughput.rows; ++i) {
    const std::vector<double> row = f->throughput.row(i);
    if (*std::max_element(row.begin(), row.end()) > 0) continue;
    fail(file, "/throughput/" + (th.is_array() ? std::to_string(i) : f->tenants[i].name),
         "tenant '" + f->tenants[i].name +
             "' has throughput 0 on every device type: its job can run nowhere (remove the "
             "tenant or fix its row)");
  }
}

}  // namespace

JobsFile parse_jobs_file(const std::string& text, const std::string& name) {
  const json root = jobs_json::parse(text, name);
  if (!root.is_object()) fail(name, "", "expected a JSON object at the top level");
  check_keys(name, "", root, {"round_seconds", "device_types", "tenants", "throughput", "comment"});
  JobsFile f;
  f.path = name;
  if (root.contains("round_seconds")) {
    f.round_seconds = get_bounded(name, "/round_seconds", root["round_seconds"], kMinRoundSeconds,
                                  kMaxRoundSeconds, "seconds");
  }
  parse_device_types(name, root, &f);
  parse_tenants(name, root, &f);
  parse_throughput(name, root, &f);
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

}  // namespace hetsgd::tenancy
