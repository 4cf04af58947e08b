#include "core/engine/summary_json.h"

#include <string>

namespace hetsgd {

void to_json(nlohmann::json& j, const DeviceSummary& d) {
  j = nlohmann::json{{"name", d.name},
                     {"id", d.id.str()},
                     {"alive", d.alive},
                     {"failure", d.failure},
                     {"updates", d.updates},
                     {"samples", d.samples},
                     {"batch_size", d.batch_size},
                     {"throughput", d.throughput},
                     {"busy_s", d.busy_s}};
}

void from_json(const nlohmann::json& j, DeviceSummary& d) {
  d.name = j.at("name").get<std::string>();
  d.id = parse_device_id(j.at("id").get<std::string>());
  d.alive = j.at("alive").get<bool>();
  d.failure = j.at("failure").get<std::string>();
  d.updates = j.at("updates").get<index_t>();
  d.samples = j.at("samples").get<index_t>();
  d.batch_size = j.at("batch_size").get<index_t>();
  d.throughput = j.at("throughput").get<double>();
  d.busy_s = j.at("busy_s").get<double>();
}

}  // namespace hetsgd
