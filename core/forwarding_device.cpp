#include "core/forwarding_device.h"

#include "core/error.h"

namespace hetsgd {

ForwardingDevice::ForwardingDevice(std::unique_ptr<Device> inner) : inner_(std::move(inner)) {
  HETSGD_CHECK(inner_ != nullptr, "a device decorator needs a device to wrap");
}

}  // namespace hetsgd
