#include "core/device.h"

#include <cctype>
#include <memory>
#include <ostream>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace hetsgd {

OptimizerStream Device::stream_of(OptimizerState state) {
  auto held = std::make_shared<OptimizerState>(std::move(state));
  OptimizerStream out;
  out.first = static_cast<index_t>(held->first.size());
  out.second = static_cast<index_t>(held->second.size());
  out.steps = held->steps;
  out.stream = [held](int which, const FloatSink& sink) {
    const std::vector<float>& v = which == 0 ? held->first : held->second;
    if (!v.empty()) sink(v.data(), v.size());
  };
  return out;
}

OptimizerState Device::read_optimizer() {
  const OptimizerStream s = stream_optimizer();
  OptimizerState out;
  out.steps = s.steps;
  out.first.reserve(static_cast<std::size_t>(s.first));
  out.second.reserve(static_cast<std::size_t>(s.second));
  for (int which = 0; which < 2; ++which) {
    std::vector<float>& v = which == 0 ? out.first : out.second;
    if ((which == 0 ? s.first : s.second) == 0) continue;
    s.stream(which, [&v](const float* data, std::size_t n) { v.insert(v.end(), data, data + n); });
  }
  return out;
}

std::string DeviceId::str() const {
  std::ostringstream os;
  os << (kind == DeviceKind::kCpu ? "cpu" : "cuda") << ':' << ordinal;
  if (emulated()) os << '@' << speed;
  return os.str();
}

void PrintTo(const DeviceId& id, std::ostream* os) { *os << id.str(); }

DeviceId parse_device_id(const std::string& text) {
  std::string body = text;
  DeviceId id;
  const auto at = body.find('@');
  if (at != std::string::npos) {
    const std::string f = body.substr(at + 1);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    // Plain decimals only ("0.33", ".5", "1e-1"): a sign, "inf" or "nan" is not a speed.
    const bool plain =
        !f.empty() && (std::isdigit(static_cast<unsigned char>(f[0])) || f[0] == '.');
    HETSGD_CHECK(plain && used == f.size() && used > 0,
                 "device '" << text << "': speed factor '" << f << "' is not a number");
    // Below kMinEmulatedSpeed a step would sleep 100x its compute time or more: a typo, and
    // at 1e-300 the stretched duration overflows.
    HETSGD_CHECK(v >= kMinEmulatedSpeed && v <= 1.0, "device '" << text << "': speed factor " << v
                                                                << " outside [" << kMinEmulatedSpeed
                                                                << ", 1]");
    id.speed = v;
    body = body.substr(0, at);
  }
  const auto colon = body.find(':');
  const std::string kind = body.substr(0, colon);
  if (kind == "cpu") {
    id.kind = DeviceKind::kCpu;
  } else if (kind == "cuda" || kind == "gpu") {
    id.kind = DeviceKind::kCuda;
  } else {
    throw InvalidArgument("device '" + text + "': unknown kind '" + kind +
                          "' (expected cpu, cpu:N or cuda:N)");
  }
  if (colon != std::string::npos) {
    const std::string n = body.substr(colon + 1);
    HETSGD_CHECK(
        !n.empty() && n.size() < 6 && n.find_first_not_of("0123456789") == std::string::npos,
        "device '" << text << "': ordinal '" << n << "' is not a number in [0, 99999]");
    id.ordinal = std::stoi(n);
  }
  return id;
}

std::vector<DeviceId> parse_device_list(const std::string& text) {
  HETSGD_CHECK(text.empty() || text.back() != ',',
               "device list '" << text << "' has an empty entry (trailing comma)");
  std::vector<DeviceId> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    HETSGD_CHECK(!item.empty(), "device list '" << text << "' has an empty entry");
    out.push_back(parse_device_id(item));
  }
  HETSGD_CHECK(!out.empty(), "device list is empty");
  return out;
}

}  // namespace hetsgd
