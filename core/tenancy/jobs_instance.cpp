// From a parsed jobs file to the sharing Instance: device types (listed, or grouped from the
// devices present) and the throughput matrix (given, or measured by a profiling hook), and the
// enforcement setup with each tenant's arrival, departure and emulated speed factors.
#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "core/tenancy/jobs_file.h"
#include "core/tenancy/share_runner.h"

namespace hetsgd::tenancy {

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

SharingSetup make_setup(const JobsFile& file, const ProfileFn& profile,
                        const std::vector<DeviceId>& present) {
  SharingSetup s;
  s.instance = make_instance(file, profile, present);
  s.types = resolve_types(file, present);
  const int n = s.instance.num_tenants(), m = s.instance.num_types();
  s.speed_factor = Matrix(n, m, 1.0);
  for (int i = 0; i < n; ++i) {
    s.arrive_round.push_back(file.tenants[i].arrive_round);
    s.leave_round.push_back(file.tenants[i].leave_round);
    for (int j = 0; j < m; ++j) {
      const auto it = file.tenants[i].emulated_speed.find(s.instance.types[j]);
      if (it != file.tenants[i].emulated_speed.end()) s.speed_factor(i, j) = it->second;
    }
  }
  return s;
}

}  // namespace hetsgd::tenancy
