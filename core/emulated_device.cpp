#include "core/emulated_device.h"

#include <chrono>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/forwarding_device.h"

namespace hetsgd {
namespace {

// Only compute calls are stretched; transfers, row exchanges and the optimiser state are merges
// and checkpoints, forwarded as they are by ForwardingDevice.
class EmulatedDevice final : public ForwardingDevice {
 public:
  EmulatedDevice(std::unique_ptr<Device> inner, double speed)
      : ForwardingDevice(std::move(inner)), speed_(speed) {}

  DeviceId id() const override {
    DeviceId d = inner().id();
    d.speed = speed_;
    return d;
  }
  std::string name() const override {
    std::ostringstream os;
    os << inner().name() << " emulated at " << speed_ << "x";
    return os.str();
  }
  float train_step(const CsrBatch& b, float lr) override {
    return stretched([&] { return inner().train_step(b, lr); });
  }
  float gradient(const CsrBatch& b, float scale) override {
    return stretched([&] { return inner().gradient(b, scale); });
  }
  void apply_update(float lr) override {
    stretched([&] {
      inner().apply_update(lr);
      return 0.0f;
    });
  }
  // predict_topk and score_all are not slowed: evaluation runs on the centre model and is timed
  // separately.

 private:
  template <class F>
  float stretched(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    const float r = f();
    inner().synchronize();
    const auto spent = std::chrono::steady_clock::now() - t0;
    // Sleep the difference between the emulated and the real duration.
    const auto extra =
        std::chrono::duration_cast<std::chrono::nanoseconds>(spent) * ((1.0 - speed_) / speed_);
    std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(extra.count())));
    return r;
  }

  double speed_;
};

}  // namespace

std::unique_ptr<Device> make_emulated_device(std::unique_ptr<Device> inner, double speed) {
  HETSGD_CHECK(speed > 0.0 && speed <= 1.0, "speed factor " << speed << " outside (0, 1]");
  if (speed == 1.0) return inner;
  return std::make_unique<EmulatedDevice>(std::move(inner), speed);
}

}  // namespace hetsgd
