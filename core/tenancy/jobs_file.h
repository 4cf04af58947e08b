/// \file core/tenancy/jobs_file.h
/// The jobs file of `hetsgd share`: who shares the server, with which weight, which training job
/// each tenant runs, which device types there are, and optionally the throughput matrix and
/// emulated per-tenant speed factors. JSON, read with nlohmann_json. Example:
/// tools/share_example.json.
///
/// ```
/// { "round_seconds": 10,
///   "device_types": [ {"name": "fast", "devices": ["cpu:0", "cpu:1"]},
///                     {"name": "slow", "count": 2} ],          // or "device_types": "present"
///   "tenants": [ {"name": "alice", "weight": 1,
///                 "job": {"data": "synthetic:eurlex", "hidden": [128], "algorithm": "adaptive",
///                         "options": {"lr": 0.1}},
///                 "arrive_round": 0, "leave_round": 40,
///                 "emulated_speed": {"slow": 0.25}} ],
///   "throughput": {"alice": {"fast": 900, "slow": 300}} }      // or [[900, 300], ...]
/// ```
/// One job per tenant (a person with two jobs is two tenants with half the weight each). Job
/// fields other than data/hidden/algorithm go to `options` as text for the engine to interpret.
/// Every error names the file and the JSON path of the bad value, e.g.
/// `share.json: /tenants/1/weight: expected a weight in [0.001, 1000], got -2`. Duplicate keys,
/// non-finite or out-of-range numbers (bounds below) and a tenant whose throughput row is all
/// zero are refused; so are files that are not regular files (FIFO, device, directory: refused
/// by name before opening) and files larger than kMaxJobsFileBytes.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tenancy/instance.h"

namespace hetsgd::tenancy {

/// Largest jobs file read_jobs_file() accepts, in bytes (16 MiB).
inline constexpr std::size_t kMaxJobsFileBytes = 16u << 20;
/// Throughputs in the file are 0 (cannot run) or samples/s per device in [kMinThroughput,
/// kMaxThroughput]; anything else is refused with its JSON path.
inline constexpr double kMinThroughput = 1e-6;
/// See kMinThroughput.
inline constexpr double kMaxThroughput = 1e12;
/// Device counts per type lie in [1, kMaxDevicesPerType] (the scheduler keeps one slot each).
inline constexpr int kMaxDevicesPerType = 4096;
/// Tenant weights lie in [kMinWeight, kMaxWeight].
inline constexpr double kMinWeight = 1e-3;
/// See kMinWeight.
inline constexpr double kMaxWeight = 1e3;
/// Emulated per-tenant speed factors lie in [kMinEmulatedSpeed, 1].
inline constexpr double kMinEmulatedSpeed = 1e-3;
/// round_seconds lies in [kMinRoundSeconds, kMaxRoundSeconds] (1 ms to one day).
inline constexpr double kMinRoundSeconds = 1e-3;
/// See kMinRoundSeconds.
inline constexpr double kMaxRoundSeconds = 86400.0;

/// One tenant's training job, as free-form as the engine needs.
struct JobSpec {
  std::string data;                            ///< dataset path or "synthetic:<preset>"
  std::vector<int> hidden;                     ///< hidden layer sizes (empty = engine default)
  std::string algorithm;                       ///< e.g. "adaptive", "sync" ("" = engine default)
  std::map<std::string, std::string> options;  ///< other fields as text (numbers printed, JSON
                                               ///< arrays/objects dumped)
  /// Where each entry of `options` was in the file (JSON path), for error messages.
  std::map<std::string, std::string> option_paths;
};

/// One tenant of the jobs file.
struct TenantSpec {
  std::string name;                              ///< unique name
  double weight = 1.0;                           ///< share weight, > 0
  JobSpec job;                                   ///< its job
  int arrive_round = 0;                          ///< first round it is present (simulation/runner)
  int leave_round = -1;                          ///< first round it is gone (-1 = never leaves)
  std::map<std::string, double> emulated_speed;  ///< EMULATION: type -> factor in (0, 1]
};

/// One device type of the jobs file.
struct DeviceTypeSpec {
  std::string name;               ///< unique type name
  int count = 0;                  ///< number of devices (= devices.size() when listed)
  std::vector<DeviceId> devices;  ///< the devices, when listed (empty: count only, simulation)
};

/// A parsed jobs file.
struct JobsFile {
  std::string path;                   ///< where it was read from (for messages)
  double round_seconds = 10.0;        ///< enforcement round length R
  std::vector<TenantSpec> tenants;    ///< in file order
  bool types_from_present = false;    ///< "device_types": "present"
  std::vector<DeviceTypeSpec> types;  ///< in file order (empty when types_from_present)
  bool has_throughput = false;        ///< a throughput matrix was given
  Matrix throughput;                  ///< tenants x types, samples/s per device
};

/// Reads and checks `path`; throws hetsgd::IoError (missing, not a regular file, too large,
/// unreadable, JSON syntax with line and column) or hetsgd::InvalidArgument (bad value or
/// duplicate key, with file and JSON path).
JobsFile read_jobs_file(const std::string& path);
/// Same, from text; `name` is used in messages in place of a path.
JobsFile parse_jobs_file(const std::string& text, const std::string& name);

/// Groups present devices into types: devices with equal `names[k]` (e.g. the GPU model) or, when
/// `names` is empty, equal kind and emulated speed ("cuda", "cpu", "cpu@0.5") form one type.
std::vector<DeviceTypeSpec> types_from_devices(const std::vector<DeviceId>& devices,
                                               const std::vector<std::string>& names = {});

/// Measured samples/s of tenant `i`'s job on ONE device of type `type` (profiling hook; the
/// application wires it to short engine runs).
using ProfileFn = std::function<double(int tenant, const std::string& type)>;

/// Builds the sharing Instance from a jobs file: types from the file (or from `present` when the
/// file says "present"), throughput from the file or else from `profile` (required then), then
/// each tenant's emulated speed factors multiplied in (Instance::emulated set). Validates.
Instance make_instance(const JobsFile& file, const ProfileFn& profile = nullptr,
                       const std::vector<DeviceId>& present = {});

/// The device types the instance was built with (resolves "present" the same way).
std::vector<DeviceTypeSpec> resolve_types(const JobsFile& file,
                                          const std::vector<DeviceId>& present = {});

}  // namespace hetsgd::tenancy
