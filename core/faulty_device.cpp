#include "core/faulty_device.h"

#include <sstream>

#include "core/error.h"
#include "core/random.h"

namespace hetsgd {
namespace {

class FaultyDevice final : public Device {
 public:
  FaultyDevice(std::unique_ptr<Device> inner, FaultSpec spec)
      : inner_(std::move(inner)), spec_(std::move(spec)) {}

  DeviceId id() const override { return inner_->id(); }
  std::string name() const override { return inner_->name() + " (fault-injected)"; }
  const ModelConfig& config() const override { return inner_->config(); }
  const ParamLayout& layout() const override { return inner_->layout(); }

  float train_step(const CsrBatch& b, float lr) override {
    step();
    return inner_->train_step(b, lr);
  }
  float gradient(const CsrBatch& b, float scale) override {
    step();
    return inner_->gradient(b, scale);
  }
  void read_gradient(float* dst) override {
    alive();
    inner_->read_gradient(dst);
  }
  void write_gradient(const float* src) override {
    alive();
    inner_->write_gradient(src);
  }
  void apply_update(float lr) override {
    alive();
    inner_->apply_update(lr);
  }
  float predict_topk(const CsrBatch& b, int k, col_t* labels, float* scores) override {
    alive();
    return inner_->predict_topk(b, k, labels, scores);
  }
  void read_params(float* dst) override {
    alive();
    inner_->read_params(dst);
  }
  void write_params(const float* src) override {
    alive();
    inner_->write_params(src);
  }
  void reset_optimizer() override {
    alive();
    inner_->reset_optimizer();
  }
  OptimizerState read_optimizer() override {
    alive();
    return inner_->read_optimizer();
  }
  void write_optimizer(const OptimizerState& state) override {
    alive();
    inner_->write_optimizer(state);
  }
  void synchronize() override {
    alive();
    inner_->synchronize();
  }
  ParamRows touched_since_sync() const override { return inner_->touched_since_sync(); }
  void clear_touched() override { inner_->clear_touched(); }
  ParamRows gradient_rows() const override { return inner_->gradient_rows(); }
  void read_rows(const ParamRows& rows, float* dst) override {
    alive();
    inner_->read_rows(rows, dst);
  }
  void write_rows(const ParamRows& rows, const float* src) override {
    alive();
    inner_->write_rows(rows, src);
  }
  void read_gradient_rows(const ParamRows& rows, float* dst) override {
    alive();
    inner_->read_gradient_rows(rows, dst);
  }
  void write_gradient_rows(const ParamRows& rows, const float* src) override {
    alive();
    inner_->write_gradient_rows(rows, src);
  }

 private:
  void step() {
    alive();
    const index_t k = steps_++;
    bool fire = spec_.fail_after_steps >= 0 && k >= spec_.fail_after_steps;
    if (spec_.fail_probability > 0.0 &&
        uniform01(spec_.seed, static_cast<std::uint64_t>(k)) < spec_.fail_probability) {
      fire = true;
    }
    if (fire) {
      dead_ = true;
      std::ostringstream os;
      os << inner_->id().str() << ": " << spec_.message << " at step " << k;
      what_ = os.str();
      throw DeviceUnavailable(what_);
    }
  }
  void alive() const {
    if (dead_) throw DeviceUnavailable(what_ + " (device already failed)");
  }

  std::unique_ptr<Device> inner_;
  FaultSpec spec_;
  index_t steps_ = 0;
  bool dead_ = false;
  std::string what_;
};

}  // namespace

FaultSpec parse_fault_spec(const std::string& text) {
  FaultSpec spec;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    HETSGD_CHECK(eq != std::string::npos,
                 "fault spec '" << text << "': item '" << item << "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    try {
      size_t used = 0;
      if (key == "after") {
        spec.fail_after_steps = std::stoll(value, &used);
      } else if (key == "p") {
        spec.fail_probability = std::stod(value, &used);
      } else if (key == "seed") {
        spec.seed = std::stoull(value, &used);
      } else if (key == "msg") {
        spec.message = value;
        used = value.size();
      } else {
        throw InvalidArgument("fault spec '" + text + "': unknown key '" + key +
                              "' (expected after, p, seed or msg)");
      }
      HETSGD_CHECK(used == value.size(),
                   "fault spec '" << text << "': '" << value << "' is not a number");
    } catch (const std::logic_error&) {
      throw InvalidArgument("fault spec '" + text + "': '" + value + "' is not a number");
    }
  }
  HETSGD_CHECK(spec.fail_probability >= 0.0 && spec.fail_probability <= 1.0,
               "fault spec '" << text << "': p " << spec.fail_probability << " outside [0, 1]");
  return spec;
}

std::unique_ptr<Device> make_faulty_device(std::unique_ptr<Device> inner, FaultSpec spec) {
  HETSGD_CHECK(inner != nullptr, "make_faulty_device: no device to wrap");
  return std::make_unique<FaultyDevice>(std::move(inner), std::move(spec));
}

}  // namespace hetsgd
