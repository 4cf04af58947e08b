#include "core/emulated_device.h"

#include <chrono>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace hetsgd {
namespace {

class EmulatedDevice final : public Device {
 public:
  EmulatedDevice(std::unique_ptr<Device> inner, double speed)
      : inner_(std::move(inner)), speed_(speed) {}

  DeviceId id() const override {
    DeviceId d = inner_->id();
    d.speed = speed_;
    return d;
  }
  std::string name() const override {
    std::ostringstream os;
    os << inner_->name() << " emulated at " << speed_ << "x";
    return os.str();
  }
  const ModelConfig& config() const override { return inner_->config(); }
  const ParamLayout& layout() const override { return inner_->layout(); }

  float train_step(const CsrBatch& b, float lr) override {
    return stretched([&] { return inner_->train_step(b, lr); });
  }
  float gradient(const CsrBatch& b, float scale) override {
    return stretched([&] { return inner_->gradient(b, scale); });
  }
  void read_gradient(float* dst) override { inner_->read_gradient(dst); }
  void write_gradient(const float* src) override { inner_->write_gradient(src); }
  void apply_update(float lr) override {
    stretched([&] {
      inner_->apply_update(lr);
      return 0.0f;
    });
  }
  float predict_topk(const CsrBatch& b, int k, col_t* labels, float* scores) override {
    // Evaluation is not slowed: it runs on the centre model and is timed separately.
    return inner_->predict_topk(b, k, labels, scores);
  }
  void read_params(float* dst) override { inner_->read_params(dst); }
  void write_params(const float* src) override { inner_->write_params(src); }
  void reset_optimizer() override { inner_->reset_optimizer(); }
  OptimizerState read_optimizer() override { return inner_->read_optimizer(); }
  void write_optimizer(const OptimizerState& state) override { inner_->write_optimizer(state); }
  OptimizerStream stream_optimizer() override { return inner_->stream_optimizer(); }
  void synchronize() override { inner_->synchronize(); }
  // Row exchanges are merges: not slowed, like read_params / write_params.
  ParamRows touched_since_sync() const override { return inner_->touched_since_sync(); }
  void clear_touched() override { inner_->clear_touched(); }
  ParamRows gradient_rows() const override { return inner_->gradient_rows(); }
  void read_rows(const ParamRows& rows, float* dst) override { inner_->read_rows(rows, dst); }
  void write_rows(const ParamRows& rows, const float* src) override {
    inner_->write_rows(rows, src);
  }
  float* host_params() override { return inner_->host_params(); }
  void host_params_written() override { inner_->host_params_written(); }
  void read_gradient_rows(const ParamRows& rows, float* dst) override {
    inner_->read_gradient_rows(rows, dst);
  }
  void write_gradient_rows(const ParamRows& rows, const float* src) override {
    inner_->write_gradient_rows(rows, src);
  }

  Device* inner() const { return inner_.get(); }

 private:
  template <class F>
  float stretched(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    const float r = f();
    inner_->synchronize();
    const auto spent = std::chrono::steady_clock::now() - t0;
    // Sleep the difference between the emulated and the real duration.
    const auto extra =
        std::chrono::duration_cast<std::chrono::nanoseconds>(spent) * ((1.0 - speed_) / speed_);
    std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(extra.count())));
    return r;
  }

  std::unique_ptr<Device> inner_;
  double speed_;
};

}  // namespace

std::unique_ptr<Device> make_emulated_device(std::unique_ptr<Device> inner, double speed) {
  HETSGD_CHECK(speed > 0.0 && speed <= 1.0, "speed factor " << speed << " outside (0, 1]");
  if (speed == 1.0) return inner;
  return std::make_unique<EmulatedDevice>(std::move(inner), speed);
}

Device* emulated_inner(Device* device) {
  auto* e = dynamic_cast<EmulatedDevice*>(device);
  return e == nullptr ? device : e->inner();
}

}  // namespace hetsgd
